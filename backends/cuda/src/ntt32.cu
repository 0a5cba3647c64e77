#include <cooperative_groups.h>

#include <bit>
#include <string>

#include "cluster_entry.cuh"
#include "cuda_check.hpp"
#include "fhelium/error.hpp"
#include "kernel_attributes.hpp"
#include "ntt32.hpp"

namespace fhelium::cuda {
namespace {

struct Prime {
  u32 q;
  const u32* roots;
  const u32* roots_shoup;
};

__device__ __forceinline__ u32 mul_shoup_lazy(u32 x, u32 w, u32 w_shoup, u32 q) {
  return x * w - __umulhi(x, w_shoup) * q;
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
  // A negative map entry leaves its limb as it is (a whole block returns).
  __device__ __forceinline__ bool skips(unsigned limb) const { return of(limb) < 0; }
};

// Limb blockIdx.y's prime: tables of 4 x n words per prime, scalars (q, n^-1, Shoup) per prime.
__device__ __forceinline__ Prime prime_of(const u32* tables, const u32* scalars, std::uint64_t n, int p, bool forward) {
  const u32* t = tables + static_cast<std::size_t>(p) * 4 * n + (forward ? 0 : 2 * n);
  return {scalars[3 * p], t, t + n};
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
// from and written to global memory once.
constexpr int cluster_blocks = 8;

template <int LOG_N>
struct ClusterShape {
  static constexpr std::uint32_t n = 1u << LOG_N;
  static constexpr int log_tile = LOG_N - 3;
  static constexpr int tile = 1 << log_tile;
  static constexpr int columns = tile / cluster_blocks;  // per block
  static constexpr int threads = tile / 4 < 512 ? tile / 4 : 512;
  static constexpr int quads = tile / 4 / threads;  // radix-4 groups per thread and pass
  static constexpr int column_rounds = (columns + threads - 1) / threads;
  static constexpr int smem_bytes = (tile + tile / 32) * static_cast<int>(sizeof(u32));
  // Two blocks of 512 threads per SM (64 registers) up to N = 2^16; at 2^17
  // (three blocks' shared memory per SM at most) 64 registers would spill.
  static constexpr int min_blocks = threads == 512 && LOG_N <= 16 ? 2 : 1;
};

// Shared-memory slot of tile word i: one pad word after every 32, so the
// radix-4 passes of distance 1 (four consecutive words per thread) hit
// distinct banks.
__device__ __forceinline__ u32 slot(u32 i) { return i + (i >> 5); }

template <bool WIDE>
__device__ __forceinline__ void forward_butterfly(u32& x, u32& y, u32 w, u32 w_shoup, u32 q) {
  if constexpr (WIDE) {
    const u32 u = x;
    const u32 v = below(mul_shoup_lazy(y, w, w_shoup, q), q);
    x = below(u + v, q);
    y = below(u - v + q, q);
  } else {
    const u32 two_q = 2 * q;
    const u32 u = below(x, two_q);
    const u32 v = mul_shoup_lazy(y, w, w_shoup, q);
    x = u + v;
    y = u - v + two_q;
  }
}

template <bool WIDE>
__device__ __forceinline__ void inverse_butterfly(u32& x, u32& y, u32 w, u32 w_shoup, u32 q) {
  const u32 bound = WIDE ? q : 2 * q;
  const u32 u = x;
  const u32 v = y;
  x = below(u + v, bound);
  const u32 t = mul_shoup_lazy(u - v + bound, w, w_shoup, q);
  y = WIDE ? below(t, q) : t;
}

struct Root {
  u32 w;
  u32 w_shoup;
};

__device__ __forceinline__ Root root(const Prime& pr, std::uint32_t k) { return {__ldg(pr.roots + k), __ldg(pr.roots_shoup + k)}; }

// Forward radix-4 pass over tile `rank`: stages of distance T and T / 2.
// The twiddles load before the barrier that opens the pass. LAST (T == 2):
// each thread's four words are consecutive; they leave reduced to [0, q)
// straight to global memory, 16 bytes per thread.
template <int LOG_N, int T, bool WIDE>
__device__ __forceinline__ void forward_pass(u32* s, const Prime& pr, u32 rank, u32* tile_out) {
  using S = ClusterShape<LOG_N>;
  constexpr int t2 = T / 2;
  constexpr std::uint32_t m = S::n / (2 * T);
  Root wa[S::quads], wb0[S::quads], wb1[S::quads];
#pragma unroll
  for (int u = 0; u < S::quads; ++u) {
    const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
    const u32 i = rank * (S::tile / (2 * T)) + g / t2;
    wa[u] = root(pr, m + i);
    wb0[u] = root(pr, 2 * m + 2 * i);
    wb1[u] = root(pr, 2 * m + 2 * i + 1);
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < S::quads; ++u) {
    const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
    const u32 k0 = 2 * (g / t2) * T + g % t2;
    u32 x0 = s[slot(k0)], x1 = s[slot(k0 + t2)], x2 = s[slot(k0 + T)], x3 = s[slot(k0 + T + t2)];
    forward_butterfly<WIDE>(x0, x2, wa[u].w, wa[u].w_shoup, pr.q);
    forward_butterfly<WIDE>(x1, x3, wa[u].w, wa[u].w_shoup, pr.q);
    forward_butterfly<WIDE>(x0, x1, wb0[u].w, wb0[u].w_shoup, pr.q);
    forward_butterfly<WIDE>(x2, x3, wb1[u].w, wb1[u].w_shoup, pr.q);
    if constexpr (T == 2) {
      reinterpret_cast<uint4*>(tile_out)[g] =
          make_uint4(reduce_from_4q(x0, pr.q), reduce_from_4q(x1, pr.q), reduce_from_4q(x2, pr.q), reduce_from_4q(x3, pr.q));
    } else {
      s[slot(k0)] = x0;
      s[slot(k0 + t2)] = x1;
      s[slot(k0 + T)] = x2;
      s[slot(k0 + T + t2)] = x3;
    }
  }
}

template <int LOG_N, int T, bool WIDE>
__device__ __forceinline__ void forward_passes(u32* s, const Prime& pr, u32 rank, u32* tile_out) {
  forward_pass<LOG_N, T, WIDE>(s, pr, rank, tile_out);
  if constexpr (T > 2) forward_passes<LOG_N, T / 4, WIDE>(s, pr, rank, tile_out);
}

template <int LOG_N, bool WIDE>
__device__ __forceinline__ void forward_cluster_body(u32* limb, const Prime& pr, u32* s) {
  using S = ClusterShape<LOG_N>;
  constexpr int C = S::columns;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  Root w[cluster_blocks];  // roots 1..7: the column stages
#pragma unroll
  for (int m = 1; m < cluster_blocks; ++m) w[m] = root(pr, static_cast<u32>(m));
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
        for (int r = 0; r < rows; ++r) {
          forward_butterfly<WIDE>(x[c][2 * i * rows + r], x[c][2 * i * rows + r + rows], w[m + i].w, w[m + i].w_shoup,
                                  pr.q);
        }
      }
    }
  }
  wait_for_cluster_entry();
  // Word k of column rank C + j is word rank C + j of tile k.
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    const u32 j = threadIdx.x + static_cast<u32>(c * S::threads);
    if (j >= C) break;
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) cluster.map_shared_rank(s, k)[slot(rank * C + j)] = x[c][k];
  }
  cluster.sync();  // every tile is complete; no remote access follows
  u32* tile_out = limb + rank * S::tile;
  if constexpr (S::log_tile % 2 == 1) {  // the stage of distance TILE / 2 alone, then radix-4 passes
    constexpr int half = S::tile / 2;
    const Root r = root(pr, S::n / S::tile + rank);
#pragma unroll
    for (int u = 0; u < 2 * S::quads; ++u) {
      const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
      u32 a = s[slot(g)], b = s[slot(g + half)];
      forward_butterfly<WIDE>(a, b, r.w, r.w_shoup, pr.q);
      s[slot(g)] = a;
      s[slot(g + half)] = b;
    }
    forward_passes<LOG_N, S::tile / 4, WIDE>(s, pr, rank, tile_out);
  } else {
    forward_passes<LOG_N, S::tile / 2, WIDE>(s, pr, rank, tile_out);
  }
}

// Inverse radix-4 pass: stages of distance T and 2T. FIRST (T == 1): the
// words come straight from global memory, 16 bytes per thread. The outputs
// stay in `out` (the last pass's go to the owners of their columns).
template <int LOG_N, int T, bool WIDE>
__device__ __forceinline__ void inverse_pass(u32* s, const Prime& pr, u32 rank, const u32* tile_in,
                                             u32 (&out)[ClusterShape<LOG_N>::quads][4]) {
  using S = ClusterShape<LOG_N>;
  constexpr std::uint32_t h = S::n / T / 2;
  Root w0[S::quads], w1[S::quads], w[S::quads];
#pragma unroll
  for (int u = 0; u < S::quads; ++u) {
    const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
    const u32 i = rank * (S::tile / (4 * T)) + g / T;
    w0[u] = root(pr, h + 2 * i);
    w1[u] = root(pr, h + 2 * i + 1);
    w[u] = root(pr, h / 2 + i);
  }
  if constexpr (T == 1) {
#pragma unroll
    for (int u = 0; u < S::quads; ++u) {
      const uint4 v = reinterpret_cast<const uint4*>(tile_in)[threadIdx.x + static_cast<u32>(u * S::threads)];
      out[u][0] = v.x;
      out[u][1] = v.y;
      out[u][2] = v.z;
      out[u][3] = v.w;
    }
  } else {
    __syncthreads();
#pragma unroll
    for (int u = 0; u < S::quads; ++u) {
      const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
      const u32 k0 = 4 * (g / T) * T + g % T;
#pragma unroll
      for (int e = 0; e < 4; ++e) out[u][e] = s[slot(k0 + e * T)];
    }
  }
#pragma unroll
  for (int u = 0; u < S::quads; ++u) {
    inverse_butterfly<WIDE>(out[u][0], out[u][1], w0[u].w, w0[u].w_shoup, pr.q);
    inverse_butterfly<WIDE>(out[u][2], out[u][3], w1[u].w, w1[u].w_shoup, pr.q);
    inverse_butterfly<WIDE>(out[u][0], out[u][2], w[u].w, w[u].w_shoup, pr.q);
    inverse_butterfly<WIDE>(out[u][1], out[u][3], w[u].w, w[u].w_shoup, pr.q);
  }
  if constexpr (4 * T < S::tile) {  // not the last pass: back to shared memory
#pragma unroll
    for (int u = 0; u < S::quads; ++u) {
      const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
      const u32 k0 = 4 * (g / T) * T + g % T;
#pragma unroll
      for (int e = 0; e < 4; ++e) s[slot(k0 + e * T)] = out[u][e];
    }
  }
}

template <int LOG_N, int T, bool WIDE>
__device__ __forceinline__ void inverse_passes(u32* s, const Prime& pr, u32 rank, const u32* tile_in,
                                               u32 (&out)[ClusterShape<LOG_N>::quads][4]) {
  inverse_pass<LOG_N, T, WIDE>(s, pr, rank, tile_in, out);
  if constexpr (4 * T * 4 <= ClusterShape<LOG_N>::tile) inverse_passes<LOG_N, 4 * T, WIDE>(s, pr, rank, tile_in, out);
}

template <int LOG_N, bool WIDE>
__device__ __forceinline__ void inverse_cluster_body(u32* limb, const Prime& pr, u32 inv_n, u32 inv_n_shoup, u32* s) {
  using S = ClusterShape<LOG_N>;
  constexpr int C = S::columns;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  u32 out[S::quads][4];
  inverse_passes<LOG_N, 1, WIDE>(s, pr, rank, limb + rank * S::tile, out);
  // The tile's words after its last stage (word i in out, at positions
  // given below), before they leave for the owners of their columns.
  u32 words[4 * S::quads];
  u32 positions[4 * S::quads];
  if constexpr (S::log_tile % 2 == 1) {  // the stage of distance TILE / 2 alone
    constexpr int half = S::tile / 2;
    static_assert(4 * (S::tile / 8) < S::tile);  // so the last radix-4 pass left its words in shared memory
    const Root r = root(pr, S::n / S::tile + rank);
    __syncthreads();
#pragma unroll
    for (int u = 0; u < 2 * S::quads; ++u) {
      const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
      u32 a = s[slot(g)], b = s[slot(g + half)];
      inverse_butterfly<WIDE>(a, b, r.w, r.w_shoup, pr.q);
      words[2 * u] = a;
      positions[2 * u] = g;
      words[2 * u + 1] = b;
      positions[2 * u + 1] = g + half;
    }
  } else {
#pragma unroll
    for (int u = 0; u < S::quads; ++u) {  // the last pass had distance TILE / 4: k0 = g
      const u32 g = threadIdx.x + static_cast<u32>(u * S::threads);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        words[4 * u + e] = out[u][e];
        positions[4 * u + e] = g + static_cast<u32>(e * (S::tile / 4));
      }
    }
  }
  cluster.sync();  // every block has read its own tile: the buffers are free
  // Word i of tile `rank` is row `rank` of column i, which block i / C owns.
#pragma unroll
  for (int k = 0; k < 4 * S::quads; ++k) {
    const u32 i = positions[k];
    cluster.map_shared_rank(s, i / C)[slot(rank * C + i % C)] = words[k];
  }
  cluster.sync();  // the rows are complete; no remote access follows
  Root w[cluster_blocks];  // inverse roots 1..7: the column stages
#pragma unroll
  for (int m = 1; m < cluster_blocks; ++m) w[m] = root(pr, static_cast<u32>(m));
#pragma unroll
  for (int c = 0; c < S::column_rounds; ++c) {
    const u32 j = threadIdx.x + static_cast<u32>(c * S::threads);
    if (j >= C) break;
    u32 x[cluster_blocks];
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) x[k] = s[slot(k * C + j)];
#pragma unroll
    for (int m = cluster_blocks; m >= 2; m >>= 1) {
      const int h = m / 2;
      const int rows = cluster_blocks / m;
#pragma unroll
      for (int i = 0; i < h; ++i) {
#pragma unroll
        for (int r = 0; r < rows; ++r) {
          inverse_butterfly<WIDE>(x[2 * i * rows + r], x[2 * i * rows + r + rows], w[h + i].w, w[h + i].w_shoup, pr.q);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) {
      limb[k * S::tile + rank * C + j] = below(mul_shoup_lazy(x[k], inv_n, inv_n_shoup, pr.q), pr.q);
    }
  }
}

template <int LOG_N, bool FORWARD>
__global__ void __cluster_dims__(cluster_blocks, 1, 1)
    __launch_bounds__(ClusterShape<LOG_N>::threads, ClusterShape<LOG_N>::min_blocks)
        transform_cluster(u32* data, const u32* tables, const u32* scalars, LimbPrimes primes) {
  using S = ClusterShape<LOG_N>;
  extern __shared__ u32 s[];
  if (primes.skips(blockIdx.y)) return;  // the whole cluster
  const int p = primes.of(blockIdx.y);
  const Prime pr = prime_of(tables, scalars, S::n, p, FORWARD);
  u32* limb = data + static_cast<std::size_t>(blockIdx.y) * S::n;
  if constexpr (FORWARD) {
    arrive_on_entry();
    if (is_wide(pr.q)) {
      forward_cluster_body<LOG_N, true>(limb, pr, s);
    } else {
      forward_cluster_body<LOG_N, false>(limb, pr, s);
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

template <int LOG_N, bool FORWARD>
void launch_cluster(u32* data, int limbs, const u32* tables, const u32* scalars, LimbPrimes primes,
                    cudaStream_t stream) {
  using S = ClusterShape<LOG_N>;
  const auto kernel = transform_cluster<LOG_N, FORWARD>;
  allow_dynamic_smem_bytes(reinterpret_cast<const void*>(kernel), S::smem_bytes);
  kernel<<<dim3(cluster_blocks, static_cast<unsigned>(limbs)), S::threads, S::smem_bytes, stream>>>(data, tables,
                                                                                                    scalars, primes);
  check_launch("ntt32 cluster");
}

template <bool FORWARD>
void transform(u32* data, std::uint64_t n, int limbs, const u32* tables, const u32* scalars, LimbPrimes primes,
               cudaStream_t stream) {
  if (limbs <= 0) return;
  switch (std::countr_zero(n)) {
    case 10: return launch_cluster<10, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 11: return launch_cluster<11, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 12: return launch_cluster<12, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 13: return launch_cluster<13, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 14: return launch_cluster<14, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 15: return launch_cluster<15, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 16: return launch_cluster<16, FORWARD>(data, limbs, tables, scalars, primes, stream);
    case 17: return launch_cluster<17, FORWARD>(data, limbs, tables, scalars, primes, stream);
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
    for (const auto* v : {&t.roots(), &t.roots_shoup(), &t.inverse_roots(), &t.inverse_roots_shoup()}) {
      host_tables.insert(host_tables.end(), v->begin(), v->end());
    }
    host_scalars.insert(host_scalars.end(), {t.modulus(), t.inverse_n(), t.inverse_n_shoup()});
  }
  check(cudaMalloc(&tables_, host_tables.size() * sizeof(u32)), "cudaMalloc (ntt32 tables)");
  check(cudaMalloc(&scalars_, host_scalars.size() * sizeof(u32)), "cudaMalloc (ntt32 scalars)");
  check(cudaMemcpy(tables_, host_tables.data(), host_tables.size() * sizeof(u32), cudaMemcpyHostToDevice),
        "cudaMemcpy (ntt32 tables)");
  check(cudaMemcpy(scalars_, host_scalars.data(), host_scalars.size() * sizeof(u32), cudaMemcpyHostToDevice),
        "cudaMemcpy (ntt32 scalars)");
}

DeviceNtt32::~DeviceNtt32() {
  cudaFree(tables_);
  cudaFree(scalars_);
}

void DeviceNtt32::forward(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<true>(data, n_, limbs, tables_, scalars_, {primes_, limb_primes, period}, stream);
}

void DeviceNtt32::inverse(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<false>(data, n_, limbs, tables_, scalars_, {primes_, limb_primes, period}, stream);
}

}  // namespace fhelium::cuda
