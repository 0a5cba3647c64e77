#include <cooperative_groups.h>

#include <cuda/pipeline>

#include <bit>
#include <string>
#include <utility>

#include "automorphism.cuh"
#include "cluster_entry.cuh"
#include "cuda_check.hpp"
#include "fhelium/error.hpp"
#include "kernel_attributes.hpp"
#include "narrow_arith.cuh"
#include "ntt32.hpp"

namespace fhelium::cuda {
namespace {

// A twiddle and its Shoup constant, next to each other in the tables.
using Root = uint2;  // x: w, y: floor(w 2^32 / q)

struct Prime {
  u32 q;
  const Root* roots;  // forward or inverse, as the transform
};

using narrow::mul_shoup_lazy;

// Where a forward transform's words go: back in place (InPlace) or combined
// (ForwardCombine, ntt32.hpp). Words k..k+3 of limb blockIdx.y, reduced.
struct InPlace {};

template <int LOG_N>
__device__ __forceinline__ void store(const InPlace&, u32* limb, u32 k, uint4 y, u32) {
  *reinterpret_cast<uint4*>(limb + k) = y;
}

template <int LOG_N>
__device__ __forceinline__ void store(const ForwardCombine& c, u32*, u32 k, uint4 y, u32 q) {
  constexpr std::size_t n = std::size_t{1} << LOG_N;
  const int component = static_cast<int>(blockIdx.y) / c.limbs;
  const int i = static_cast<int>(blockIdx.y) % c.limbs;
  uint4 x{0, 0, 0, 0};
  const int source = c.source[i];
  if (c.x[component] != nullptr && source >= 0) {
    x = *reinterpret_cast<const uint4*>(c.x[component] + static_cast<std::size_t>(source) * n + k);
    if (c.scale_x) {
      const u32 a = c.x_factor.w[i], a_shoup = c.x_factor.w_shoup[i];
      x = {narrow::mul_shoup(x.x, a, a_shoup, q), narrow::mul_shoup(x.y, a, a_shoup, q),
           narrow::mul_shoup(x.z, a, a_shoup, q), narrow::mul_shoup(x.w, a, a_shoup, q)};
    }
  }
  const u32 w = c.w.w[i], w_shoup = c.w.w_shoup[i];
  u32 r[4] = {narrow::mul_shoup(x.x - y.x + q, w, w_shoup, q), narrow::mul_shoup(x.y - y.y + q, w, w_shoup, q),
              narrow::mul_shoup(x.z - y.z + q, w, w_shoup, q), narrow::mul_shoup(x.w - y.w + q, w, w_shoup, q)};
  if (const u32* add = c.add[component]; add != nullptr && c.add_at_source) {
    if (source >= 0) {
      const uint4 a = *reinterpret_cast<const uint4*>(add + static_cast<std::size_t>(source) * n + k);
      const u32 f = c.add_factor.w[i], f_shoup = c.add_factor.w_shoup[i];
      r[0] = narrow::add_mod(r[0], narrow::mul_shoup(a.x, f, f_shoup, q), q);
      r[1] = narrow::add_mod(r[1], narrow::mul_shoup(a.y, f, f_shoup, q), q);
      r[2] = narrow::add_mod(r[2], narrow::mul_shoup(a.z, f, f_shoup, q), q);
      r[3] = narrow::add_mod(r[3], narrow::mul_shoup(a.w, f, f_shoup, q), q);
    }
  } else if (add != nullptr) {
    const u32* row = add + static_cast<std::size_t>(i) * n;
    const u32 g = c.add_galois[component];
    if (g != 0) {
#pragma unroll
      for (int e = 0; e < 4; ++e) r[e] = narrow::add_mod(r[e], row[automorphism_index(k + e, g, LOG_N)], q);
    } else {
      const uint4 a = *reinterpret_cast<const uint4*>(row + k);
      r[0] = narrow::add_mod(r[0], a.x, q);
      r[1] = narrow::add_mod(r[1], a.y, q);
      r[2] = narrow::add_mod(r[2], a.z, q);
      r[3] = narrow::add_mod(r[3], a.w, q);
    }
  }
  *reinterpret_cast<uint4*>(c.out[component] + static_cast<std::size_t>(i) * n + k) = make_uint4(r[0], r[1], r[2], r[3]);
}

__device__ __forceinline__ u32 below(u32 x, u32 bound) { return x >= bound ? x - bound : x; }

// Primes from 2^30 (wide: 4q would pass 2^32) keep every value below q; the
// others below 4q, lazily. The outputs are the same residues.
__device__ __forceinline__ bool is_wide(u32 q) { return q >= (u32{1} << 30); }

// Which prime each limb (blockIdx.y) uses.
struct LimbPrimes {
  int primes;             // all of them
  const int* map;         // limb b uses map[b % period]; null: b % primes
  int period;

  __device__ __forceinline__ int of(unsigned limb) const {
    return map ? map[limb % static_cast<unsigned>(period)] : static_cast<int>(limb % static_cast<unsigned>(primes));
  }
  // A negative map entry leaves its limb as it is (its whole cluster returns).
  __device__ __forceinline__ bool skips(unsigned limb) const { return of(limb) < 0; }
};

// Limb blockIdx.y's prime: per prime, N forward then N inverse Roots; scalars (q, n^-1, Shoup) per prime.
__device__ __forceinline__ Prime prime_of(const Root* tables, const u32* scalars, std::uint64_t n, int p, bool forward) {
  return {scalars[3 * p], tables + static_cast<std::size_t>(p) * 2 * n + (forward ? 0 : n)};
}

__device__ __forceinline__ u32 reduce_from_4q(u32 v, u32 q) {
  v = below(v, 2 * q);
  return below(v, q);
}

// A limb of N = 8 x TILE words is transformed by a cluster of 8 blocks in one
// launch: the 3 stages of distance >= TILE on columns of 8 words (block r
// owns columns [r C, r C + C), C = TILE / 8), the log2(TILE) stages inside
// tile r of TILE contiguous words in shared memory, and the words cross
// between the two through distributed shared memory, so each word is read
// from and written to global memory once. A tile pass takes groups of 2^R
// words (R <= 4) into registers and runs R stages on them.
constexpr int cluster_blocks = 8;

template <int LOG_N>
struct ClusterShape {
  static constexpr std::uint32_t n = 1u << LOG_N;
  static constexpr int log_tile = LOG_N - 3;
  static constexpr int tile = 1 << log_tile;
  static constexpr int columns = tile / cluster_blocks;  // per block
  static constexpr int threads = tile / 4 < 512 ? tile / 4 : 512;
  static constexpr int words = tile / threads;  // per thread in a tile pass: 4 to 32
  static constexpr int max_radix_log = words >= 16 ? 4 : words == 8 ? 3 : 2;
  // The forward's first pass takes the stages whole passes leave over (the inverse's last likewise).
  static constexpr int odd_radix_log = log_tile % max_radix_log == 0 ? max_radix_log : log_tile % max_radix_log;
  static constexpr int column_rounds = (columns + threads - 1) / threads;
  static constexpr int data_words = tile + tile / 32;  // at slot(i)
  // The data, then the tile's twiddles.
  static constexpr int smem_bytes = data_words * static_cast<int>(sizeof(u32)) + tile * static_cast<int>(sizeof(Root));
  // Two blocks of 512 threads per SM (64 registers) up to N = 2^16; at 2^17
  // (one block's shared memory per SM) 64 registers would spill.
  static constexpr int min_blocks = threads == 512 && LOG_N <= 16 ? 2 : 1;
};

// Shared-memory slot of tile word i: one pad word after every 32, so a
// warp's reads of 16 consecutive words per thread hit distinct banks.
__device__ __forceinline__ u32 slot(u32 i) { return i + (i >> 5); }

template <bool WIDE>
__device__ __forceinline__ void forward_butterfly(u32& x, u32& y, Root w, u32 q) {
  if constexpr (WIDE) {
    const u32 u = x;
    const u32 v = below(mul_shoup_lazy(y, w.x, w.y, q), q);
    x = below(u + v, q);
    y = below(u - v + q, q);
  } else {
    const u32 two_q = 2 * q;
    const u32 u = below(x, two_q);
    const u32 v = mul_shoup_lazy(y, w.x, w.y, q);
    x = u + v;
    y = u - v + two_q;
  }
}

template <bool WIDE>
__device__ __forceinline__ void inverse_butterfly(u32& x, u32& y, Root w, u32 q) {
  const u32 bound = WIDE ? q : 2 * q;
  const u32 u = x;
  const u32 v = y;
  x = below(u + v, bound);
  const u32 t = mul_shoup_lazy(u - v + bound, w.x, w.y, q);
  y = WIDE ? below(t, q) : t;
}

// The twiddles of tile `rank`'s stages in shared memory: entry j in [1, TILE)
// is local group j - M of the stage with M = 2^floor(log2 j) groups in the
// tile (distance TILE / 2M), global group M (8 + rank) + j - M of the table.
// Copied by cuda::memcpy_async at the kernel's start, two Roots (16 bytes) at
// a time from entry 2 on (runs of M >= 2 Roots starting at even entries), so
// the copies overlap the forward's column stages (the inverse's first loads)
// and no pass waits on global memory.
template <int LOG_N>
__device__ __forceinline__ const Root* stage_twiddles(u32* smem, const Prime& pr, u32 rank,
                                                      ::cuda::pipeline<::cuda::thread_scope_thread>& pipe) {
  using S = ClusterShape<LOG_N>;
  Root* tw = reinterpret_cast<Root*>(smem + S::data_words);
  const auto global = [&](u32 j) { return j + (1u << (31 - __clz(j))) * (cluster_blocks - 1 + rank); };
  for (u32 k = threadIdx.x; k < S::tile / 2; k += S::threads) {
    if (k == 0) {  // entry 1: the stage of one group
      ::cuda::memcpy_async(tw + 1, pr.roots + global(1), ::cuda::aligned_size_t<8>(sizeof(Root)), pipe);
    } else {
      ::cuda::memcpy_async(tw + 2 * k, pr.roots + global(2 * k), ::cuda::aligned_size_t<16>(2 * sizeof(Root)), pipe);
    }
  }
  pipe.producer_commit();
  return tw;
}

// Group gi of 2^R words at distance 2^STRIDE_LOG: its first word (no bits in
// [STRIDE_LOG, STRIDE_LOG + R)); word e is at base + e 2^STRIDE_LOG.
template <int R, int STRIDE_LOG>
__device__ __forceinline__ u32 group_base(u32 gi) {
  return ((gi >> STRIDE_LOG) << (STRIDE_LOG + R)) + (gi & ((1u << STRIDE_LOG) - 1));
}

// R forward stages of distances 2^T0_LOG, 2^(T0_LOG - 1), ... on the tile in
// shared memory. The last pass (distance 1) leaves each group's consecutive
// words reduced to [0, q) straight to `out` (words tile_first + ... of the
// limb), 16 bytes at a time.
template <int LOG_N, int R, int T0_LOG, bool WIDE, class Out>
__device__ __forceinline__ void forward_pass(u32* s, const Root* tw, u32 q, const Out& out, u32* limb, u32 tile_first) {
  using S = ClusterShape<LOG_N>;
  constexpr int group = 1 << R;
  constexpr int stride_log = T0_LOG - (R - 1);
  __syncthreads();
#pragma unroll
  for (int g = 0; g < S::words / group; ++g) {
    const u32 base = group_base<R, stride_log>(threadIdx.x + static_cast<u32>(g * S::threads));
    u32 x[group];
#pragma unroll
    for (int e = 0; e < group; ++e) x[e] = s[slot(base + (static_cast<u32>(e) << stride_log))];
#pragma unroll
    for (int st = 0; st < R; ++st) {
      const int t_log = T0_LOG - st;
      const int half = 1 << (R - 1 - st);
      const u32 m = static_cast<u32>(S::tile) >> (t_log + 1);  // the stage's groups in the tile
#pragma unroll
      for (int e = 0; e < group; ++e) {
        if (e & half) continue;
        const Root w = tw[m + (base >> (t_log + 1)) + static_cast<u32>(e >> (R - st))];
        forward_butterfly<WIDE>(x[e], x[e + half], w, q);
      }
    }
    if constexpr (stride_log == 0) {
#pragma unroll
      for (int e = 0; e < group; e += 4) {
        store<LOG_N>(out, limb, tile_first + base + static_cast<u32>(e),
                     make_uint4(reduce_from_4q(x[e], q), reduce_from_4q(x[e + 1], q), reduce_from_4q(x[e + 2], q),
                                reduce_from_4q(x[e + 3], q)),
                     q);
      }
    } else {
#pragma unroll
      for (int e = 0; e < group; ++e) s[slot(base + (static_cast<u32>(e) << stride_log))] = x[e];
    }
  }
}

template <int LOG_N, int DONE, bool WIDE, class Out>
__device__ __forceinline__ void forward_passes(u32* s, const Root* tw, u32 q, const Out& out, u32* limb,
                                               u32 tile_first) {
  using S = ClusterShape<LOG_N>;
  if constexpr (DONE < S::log_tile) {
    constexpr int R = DONE == 0 ? S::odd_radix_log : S::max_radix_log;
    forward_pass<LOG_N, R, S::log_tile - 1 - DONE, WIDE>(s, tw, q, out, limb, tile_first);
    forward_passes<LOG_N, DONE + R, WIDE>(s, tw, q, out, limb, tile_first);
  }
}

template <int LOG_N, bool WIDE, class Out>
__device__ __forceinline__ void forward_cluster_body(u32* limb, const Prime& pr, u32* s, const Out& out) {
  using S = ClusterShape<LOG_N>;
  constexpr int C = S::columns;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
  const Root* tw = stage_twiddles<LOG_N>(s, pr, rank, pipe);
  Root w[cluster_blocks];  // roots 1..7: the column stages
#pragma unroll
  for (int m = 1; m < cluster_blocks; ++m) w[m] = __ldg(pr.roots + m);
  u32 x[S::column_rounds][cluster_blocks];
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    const u32 j = threadIdx.x + static_cast<u32>(c * S::threads);
    if (j >= C) break;
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) x[c][k] = limb[k * S::tile + rank * C + j];
  }
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    if (threadIdx.x + static_cast<u32>(c * S::threads) >= C) break;
#pragma unroll
    for (int m = 1; m < cluster_blocks; m <<= 1) {
      const int rows = cluster_blocks / (2 * m);
#pragma unroll
      for (int i = 0; i < m; ++i) {
#pragma unroll
        for (int r = 0; r < rows; ++r) forward_butterfly<WIDE>(x[c][2 * i * rows + r], x[c][2 * i * rows + r + rows], w[m + i], pr.q);
      }
    }
  }
  __syncwarp();  // the barrier is .aligned: whole warps (at 2^10 half a warp has no column)
  wait_for_cluster_entry();
  // Word k of column rank C + j is word rank C + j of tile k.
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    const u32 j = threadIdx.x + static_cast<u32>(c * S::threads);
    if (j >= C) break;
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) cluster.map_shared_rank(s, k)[slot(rank * C + j)] = x[c][k];
  }
  pipe.consumer_wait();
  cluster.sync();  // every tile and its twiddles are complete; no remote access follows
  forward_passes<LOG_N, 0, WIDE>(s, tw, pr.q, out, limb, rank * S::tile);
}

// R inverse stages of distances 2^T0_LOG, 2^(T0_LOG + 1), ... on the words
// in x (group-major, S::words of them), from shared memory unless T0_LOG is
// 0 (the caller loaded them from global memory). The outputs stay in x and, but for the last
// pass, go back to shared memory.
template <int LOG_N, int R, int T0_LOG, bool WIDE, bool LAST>
__device__ __forceinline__ void inverse_pass(u32* s, const Root* tw, u32 q, u32 (&x)[ClusterShape<LOG_N>::words]) {
  using S = ClusterShape<LOG_N>;
  constexpr int group = 1 << R;
  if constexpr (T0_LOG > 0) __syncthreads();
#pragma unroll
  for (int g = 0; g < S::words / group; ++g) {
    const u32 base = group_base<R, T0_LOG>(threadIdx.x + static_cast<u32>(g * S::threads));
    u32* v = x + g * group;
    if constexpr (T0_LOG > 0) {
#pragma unroll
      for (int e = 0; e < group; ++e) v[e] = s[slot(base + (static_cast<u32>(e) << T0_LOG))];
    }
#pragma unroll
    for (int st = 0; st < R; ++st) {
      const int t_log = T0_LOG + st;
      const int half = 1 << st;
      const u32 m = static_cast<u32>(S::tile) >> (t_log + 1);
#pragma unroll
      for (int e = 0; e < group; ++e) {
        if (e & half) continue;
        const Root w = tw[m + (base >> (t_log + 1)) + static_cast<u32>(e >> (st + 1))];
        inverse_butterfly<WIDE>(v[e], v[e + half], w, q);
      }
    }
    if constexpr (!LAST) {
#pragma unroll
      for (int e = 0; e < group; ++e) s[slot(base + (static_cast<u32>(e) << T0_LOG))] = v[e];
    }
  }
}

template <int LOG_N, int DONE, bool WIDE>
__device__ __forceinline__ void inverse_passes(u32* s, const Root* tw, u32 q, u32 (&x)[ClusterShape<LOG_N>::words]) {
  using S = ClusterShape<LOG_N>;
  if constexpr (DONE < S::log_tile) {
    constexpr int remaining = S::log_tile - DONE;
    constexpr int R = remaining < S::max_radix_log ? remaining : S::max_radix_log;
    inverse_pass<LOG_N, R, DONE, WIDE, DONE + R == S::log_tile>(s, tw, q, x);
    inverse_passes<LOG_N, DONE + R, WIDE>(s, tw, q, x);
  }
}

// Where the last inverse pass leaves word k of a thread's x: its R and distance.
template <int LOG_N>
struct LastInversePass {
  using S = ClusterShape<LOG_N>;
  static constexpr int R = S::odd_radix_log;
  static constexpr int t0_log = S::log_tile - R;
  __device__ static u32 position(int k) {
    const int g = k >> R, e = k & ((1 << R) - 1);
    return group_base<R, t0_log>(threadIdx.x + static_cast<u32>(g * S::threads)) + (static_cast<u32>(e) << t0_log);
  }
};

template <int LOG_N, bool WIDE>
__device__ __forceinline__ void inverse_cluster_body(u32* limb, const Prime& pr, u32 inv_n, u32 inv_n_shoup, u32* s) {
  using S = ClusterShape<LOG_N>;
  constexpr int C = S::columns;
  constexpr int first_r = S::max_radix_log;
  static_assert(first_r >= 2 && S::log_tile >= first_r);
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  ::cuda::pipeline<::cuda::thread_scope_thread> pipe = ::cuda::make_pipeline();
  const Root* tw = stage_twiddles<LOG_N>(s, pr, rank, pipe);
  // The first pass's groups (2^R consecutive words) straight from global memory.
  u32 x[S::words];
  const u32* tile_in = limb + rank * S::tile;
#pragma unroll
  for (int k = 0; k < S::words; k += 4) {
    const u32 base = group_base<first_r, 0>(threadIdx.x + static_cast<u32>((k >> first_r) * S::threads));
    const uint4 v = reinterpret_cast<const uint4*>(tile_in + base)[(k & ((1 << first_r) - 1)) / 4];
    x[k] = v.x;
    x[k + 1] = v.y;
    x[k + 2] = v.z;
    x[k + 3] = v.w;
  }
  pipe.consumer_wait();
  __syncthreads();  // every thread's twiddle copies are complete
  inverse_passes<LOG_N, 0, WIDE>(s, tw, pr.q, x);
  cluster.sync();  // every block has read its own tile: the buffers are free
  // Word i of tile `rank` is row `rank` of column i, which block i / C owns.
#pragma unroll
  for (int k = 0; k < S::words; ++k) {
    const u32 i = LastInversePass<LOG_N>::position(k);
    cluster.map_shared_rank(s, i / C)[slot(rank * C + i % C)] = x[k];
  }
  cluster.sync();  // the rows are complete; no remote access follows
  Root w[cluster_blocks];  // inverse roots 1..7: the column stages
#pragma unroll
  for (int m = 1; m < cluster_blocks; ++m) w[m] = __ldg(pr.roots + m);
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    const u32 j = threadIdx.x + static_cast<u32>(c * S::threads);
    if (j >= C) break;
    u32 y[cluster_blocks];
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) y[k] = s[slot(k * C + j)];
#pragma unroll
    for (int m = cluster_blocks; m >= 2; m >>= 1) {
      const int h = m / 2;
      const int rows = cluster_blocks / m;
#pragma unroll
      for (int i = 0; i < h; ++i) {
#pragma unroll
        for (int r = 0; r < rows; ++r) inverse_butterfly<WIDE>(y[2 * i * rows + r], y[2 * i * rows + r + rows], w[h + i], pr.q);
      }
    }
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) {
      limb[k * S::tile + rank * C + j] = narrow::mul_shoup(y[k], inv_n, inv_n_shoup, pr.q);
    }
  }
}

template <int LOG_N, bool FORWARD, class Out>
__global__ void __cluster_dims__(cluster_blocks, 1, 1)
    __launch_bounds__(ClusterShape<LOG_N>::threads, ClusterShape<LOG_N>::min_blocks)
        transform_cluster(u32* data, const Root* tables, const u32* scalars, LimbPrimes primes,
                          const __grid_constant__ Out out) {
  using S = ClusterShape<LOG_N>;
  extern __shared__ __align__(16) u32 s[];  // 16-byte twiddle copies
  if (primes.skips(blockIdx.y)) return;  // the whole cluster
  const int p = primes.of(blockIdx.y);
  const Prime pr = prime_of(tables, scalars, S::n, p, FORWARD);
  u32* limb = data + static_cast<std::size_t>(blockIdx.y) * S::n;
  if constexpr (FORWARD) {
    arrive_on_entry();
    if (is_wide(pr.q)) {
      forward_cluster_body<LOG_N, true>(limb, pr, s, out);
    } else {
      forward_cluster_body<LOG_N, false>(limb, pr, s, out);
    }
  } else {
    const u32 inv_n = scalars[3 * p + 1], inv_n_shoup = scalars[3 * p + 2];
    if (is_wide(pr.q)) {
      inverse_cluster_body<LOG_N, true>(limb, pr, inv_n, inv_n_shoup, s);
    } else {
      inverse_cluster_body<LOG_N, false>(limb, pr, inv_n, inv_n_shoup, s);
    }
  }
}

template <int LOG_N, bool FORWARD, class Out>
void launch_cluster(u32* data, int limbs, const Root* tables, const u32* scalars, LimbPrimes primes,
                    cudaStream_t stream, const Out& out) {
  using S = ClusterShape<LOG_N>;
  const auto kernel = transform_cluster<LOG_N, FORWARD, Out>;
  allow_dynamic_smem_bytes(reinterpret_cast<const void*>(kernel), S::smem_bytes);
  kernel<<<dim3(cluster_blocks, static_cast<unsigned>(limbs)), S::threads, S::smem_bytes, stream>>>(
      data, tables, scalars, primes, out);
  check_launch("ntt32 cluster");
}

template <bool FORWARD, class Out = InPlace>
void transform(u32* data, std::uint64_t n, int limbs, const Root* tables, const u32* scalars, LimbPrimes primes,
               cudaStream_t stream, const Out& out = {}) {
  if (limbs <= 0) return;
  if (limbs > 65535) {
    throw InvalidArgumentError("DeviceNtt32: " + std::to_string(limbs) + " limbs in one transform, expected at most 65535");
  }
  switch (std::countr_zero(n)) {
    case 10: return launch_cluster<10, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 11: return launch_cluster<11, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 12: return launch_cluster<12, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 13: return launch_cluster<13, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 14: return launch_cluster<14, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 15: return launch_cluster<15, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 16: return launch_cluster<16, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    case 17: return launch_cluster<17, FORWARD>(data, limbs, tables, scalars, primes, stream, out);
    default:
      throw InvalidArgumentError("DeviceNtt32: ring degree " + std::to_string(n) + ", expected 2^10 to 2^17");
  }
}

}  // namespace

DeviceNtt32::DeviceNtt32(const std::vector<NttTable32>& tables)
    : n_(tables.empty() ? 0 : tables.front().ring_degree()), primes_(static_cast<int>(tables.size())) {
  if (tables.empty()) throw InvalidArgumentError("DeviceNtt32: no prime");
  if (n_ < 1024 || n_ > (std::uint64_t{1} << 17)) {
    throw InvalidArgumentError("DeviceNtt32: ring degree " + std::to_string(n_) + ", expected 2^10 to 2^17");
  }
  std::vector<u32> host_tables, host_scalars;
  for (const NttTable32& t : tables) {
    if (t.ring_degree() != n_) {
      throw InvalidArgumentError("DeviceNtt32: tables of ring degrees " + std::to_string(n_) + " and " +
                                 std::to_string(t.ring_degree()));
    }
    for (const auto& [roots, shoup] : {std::pair{&t.roots(), &t.roots_shoup()},
                                        std::pair{&t.inverse_roots(), &t.inverse_roots_shoup()}}) {
      for (std::uint64_t k = 0; k < n_; ++k) host_tables.insert(host_tables.end(), {(*roots)[k], (*shoup)[k]});
    }
    host_scalars.insert(host_scalars.end(), {t.modulus(), t.inverse_n(), t.inverse_n_shoup()});
  }
  try {  // a constructor that throws runs no destructor
    check(cudaMalloc(&tables_, host_tables.size() * sizeof(u32)), "cudaMalloc (ntt32 tables)");
    check(cudaMalloc(&scalars_, host_scalars.size() * sizeof(u32)), "cudaMalloc (ntt32 scalars)");
    check(cudaMemcpy(tables_, host_tables.data(), host_tables.size() * sizeof(u32), cudaMemcpyHostToDevice),
          "cudaMemcpy (ntt32 tables)");
    check(cudaMemcpy(scalars_, host_scalars.data(), host_scalars.size() * sizeof(u32), cudaMemcpyHostToDevice),
          "cudaMemcpy (ntt32 scalars)");
  } catch (...) {
    cudaFree(tables_);
    cudaFree(scalars_);
    throw;
  }
}

DeviceNtt32::~DeviceNtt32() {
  cudaFree(tables_);
  cudaFree(scalars_);
}

void DeviceNtt32::forward(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<true>(data, n_, limbs, reinterpret_cast<const Root*>(tables_), scalars_, {primes_, limb_primes, period}, stream);
}

void DeviceNtt32::inverse(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<false>(data, n_, limbs, reinterpret_cast<const Root*>(tables_), scalars_, {primes_, limb_primes, period}, stream);
}

void DeviceNtt32::forward_combined(const u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period,
                                   const ForwardCombine& combine) const {
  if (combine.limbs <= 0 || limbs % combine.limbs != 0 || limbs / combine.limbs > ForwardCombine::max_components) {
    throw InvalidArgumentError("DeviceNtt32: " + std::to_string(limbs) + " limbs combined in components of " +
                               std::to_string(combine.limbs) + ", expected at most " +
                               std::to_string(ForwardCombine::max_components) + " components");
  }
  // The transform reads data and writes only combine.out.
  transform<true>(const_cast<u32*>(data), n_, limbs, reinterpret_cast<const Root*>(tables_), scalars_,
                  {primes_, limb_primes, period}, stream, combine);
}

}  // namespace fhelium::cuda
