// Negacyclic NTT kernels for batches of limbs (one launch covers every limb of
// a batch, blockIdx.y selects the limb, in the tile pass through the
// batch's TileRows where it has one). Forward: Cooley-Tukey, inverse:
// Gentleman-Sande, the same twiddle tables as NttTable. Each block computes in
// IntArith (64-bit words, Harvey's lazy butterflies) or, for primes below
// 2^44, FpArith (double precision, exact; see ntt_arith.cuh). Outputs are
// fully reduced, so the result is the unique transform, bit-identical to the
// CPU's.
//
// A transform of N = N1 x TILE words runs as two kernels: `columns` does the
// log2(N1) stages with distance >= TILE, one column of N1 words per thread in
// registers; `tiles` does the log2(TILE) stages inside contiguous tiles of
// TILE words in shared memory, three stages per pass with 8 words per thread
// in registers. When N <= 1024 one `tiles` kernel does everything. A tile
// first copies its words and every twiddle it needs (one contiguous run per
// stage) into shared memory with coalesced loads, so each pass reads each
// distinct twiddle once and no pass waits on global memory; a forward tile
// runs its first pass on the loaded words before that copy (v20 in
// docs/perf/cuda.md).
//
// A Batch tells the kernels where limb b comes from and goes to:
//   bool skip(int b)                  // the block returns at once
//   int prime(int b)                  // key limb of the twiddle tables
//   u64 load(int b, u32 pos)          // input word, in [0, q)
//   u64* inter(int b)                 // N words between the two kernels
//   Aux fetch(int b, u32 pos)         // other operands the store needs
//   void store(int b, u32 pos, u64 v, const Aux&) // output word v in [0, q)
//   TileRows rows                     // optional: the tile pass's row order
// so element-wise work before and after the transform fuses into it. The
// kernels fetch the operands of all of a thread's words before storing any:
// the output may alias nothing the compiler can prove, so fetching inside the
// stores would serialise one memory round trip per word.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "cuda_check.hpp"
#include "device_types.hpp"
#include "kernel_attributes.hpp"
#include "modarith.cuh"
#include "ntt_arith.cuh"

namespace fhelium::cuda::ntt {

constexpr int column_threads = 128;

// W words per thread: 8 (radix-8 passes) or 4 (radix-4 passes, twice the
// threads and half the dependent chain per thread, for small launches).
template <int LOG_TILE, int W = 8>
struct Tile {
  static_assert(W == 8 || W == 4);
  static constexpr int size = 1 << LOG_TILE;
  static constexpr int words = W;
  static constexpr int max_radix_log = W == 8 ? 3 : 2;
  // The first forward pass takes the stages a whole number of full passes
  // leaves over (the inverse's last pass likewise).
  static constexpr int first_forward_log = LOG_TILE % max_radix_log == 0 ? max_radix_log : LOG_TILE % max_radix_log;
  static constexpr int threads = size / W;
  static constexpr int data_words = size + size / 8;  // at tile_slot positions
  // Dynamic shared memory: room for `size` twiddle pairs (entry 0 unused;
  // FpArith's twiddles take half), then the data.
  static constexpr int smem_bytes = size * 16 + data_words * 8;
};

// Column kernels of 32 words per thread (N >= 2^16) are held to 170
// registers: three blocks of 128 threads per SM instead of two at 180
// (`ncu` at 2^16: forward columns 22.1 -> 18.8 us, inverse 24.7 -> 23.1; at
// 128 registers, four blocks, they spill and take 25.1 / 28.8). The tile
// kernels stay as they are: capped at 64 registers for a fourth block of
// 2^11-word tiles they took 40.1 us instead of 39.1.
template <int N1>
constexpr int column_min_blocks = N1 == 32 ? 3 : 1;

// The shared-memory slot of tile word i: two pad words after every 16. A
// half-warp's 8-byte accesses to 16 consecutive words, or to 8-word runs 64
// apart (the distance-8 passes), and a quarter-warp's 16-byte accesses to 8
// or 4 consecutive words per thread (the distance-1 passes) each hit
// distinct banks. Slots of an aligned run of 8 words are consecutive and
// start even. (One pad word every 32 before v21: 30 % of the tile kernels'
// shared wavefronts were bank conflicts, docs/perf/cuda.md.)
__host__ __device__ constexpr u32 tile_slot(u32 i) { return i + 2 * (i >> 4); }

// Two words (or double-precision twiddles) read or written as one 16-byte
// shared-memory access.
template <class V>
struct alignas(16) PairOf {
  V lo;
  V hi;
};

// A pass's destination when it writes the tile data back: `pass` stores
// word i at tile_slot(i) itself, a group of consecutive words 16 bytes at a
// time (other destinations are called per word).
template <class V>
struct TileData {
  V* data;
};

// A tile's shared memory typed for arithmetic A.
template <int LOG_TILE, int W, class A>
struct TileSmem {
  typename A::Twiddle* tw;
  typename A::Value* data;
  __device__ explicit TileSmem(TwiddlePair* dynamic_smem)
      : tw(reinterpret_cast<typename A::Twiddle*>(dynamic_smem)),
        data(reinterpret_cast<typename A::Value*>(dynamic_smem + Tile<LOG_TILE, W>::size)) {}
};

// The twiddles of one tile in shared memory, indexed like the global table
// restricted to the tile: stage with distance t (< TILE) and tile-local
// position p uses tw[TILE / 2t + p / 2t]. Globally that is
// roots[N / 2t + (tile_base + p) / 2t] = roots[m (N1 + tile) + i] with
// m = TILE / 2t, i = p / 2t.
__device__ __forceinline__ u32 tile_twiddle_position(u32 j, u32 n1, u32 tile) {
  const u32 m = 1u << (31 - __clz(j));
  return m * (n1 + tile) + (j - m);
}

// A thread's share of a tile's twiddles: loaded on construction, stored by
// stash(), so the loads overlap whatever the thread does in between.
template <int LOG_TILE, int W, class Tw>
struct TileTwiddleLoad {
  Tw v[W];
  __device__ TileTwiddleLoad(const Tw* __restrict__ roots, u32 n1, u32 tile) {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const u32 j = position(r);
      if (j != 0) v[r] = roots[tile_twiddle_position(j, n1, tile)];
    }
  }
  __device__ void stash(Tw* tw) const {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const u32 j = position(r);
      if (j != 0) tw[j] = v[r];
    }
  }
  __device__ static u32 position(int r) { return threadIdx.x + static_cast<u32>(r * Tile<LOG_TILE, W>::threads); }
};

// All of a thread's loads are issued before its first shared-memory store.
template <int LOG_TILE, int W, class Tw>
__device__ __forceinline__ void load_tile_twiddles(Tw* tw, const Tw* __restrict__ roots, u32 n1, u32 tile) {
  TileTwiddleLoad<LOG_TILE, W, Tw>(roots, n1, tile).stash(tw);
}

// R stages over groups of 2^R words, W words per thread, in shared memory.
// Forward: distances 2^T0_LOG, 2^(T0_LOG - 1), ...; inverse: 2^T0_LOG,
// 2^(T0_LOG + 1), ... Every butterfly of a stage inside one group whose
// upper words share `e >> k` shares its twiddle, loaded once. A stage's
// distinct twiddles start at a multiple of their count, so the double-
// precision ones load two per access; a group of consecutive words (distance
// 1, stride 1) loads, and stores to TileData, two per access.
template <bool FORWARD, int R, int T0_LOG, int LOG_TILE, int W, class A, class Dst>
__device__ __forceinline__ void pass(const typename A::Value* smem, const typename A::Twiddle* tw, const A& a,
                                     Dst dst) {
  using V = typename A::Value;
  using Tw = typename A::Twiddle;
  constexpr int group = 1 << R;
  constexpr int groups_per_thread = W / group;
  constexpr int threads = Tile<LOG_TILE, W>::threads;
  constexpr int stride_log = FORWARD ? T0_LOG - (R - 1) : T0_LOG;
  constexpr int span_log = FORWARD ? T0_LOG + 1 : T0_LOG + R;
  constexpr bool consecutive = stride_log == 0 && group >= 2;
  constexpr bool data_dst = std::is_same_v<Dst, TileData<V>>;
  // Otherwise word e of a group sits at tile_slot(base) + tile_slot(e <<
  // stride_log), a constant offset: base has no bits in [stride_log,
  // stride_log + R), where e << stride_log lives, and tile_slot adds over
  // disjoint bit fields.
#pragma unroll
  for (int g = 0; g < groups_per_thread; ++g) {
    const u32 gi = threadIdx.x + static_cast<u32>(g * threads);
    const u32 off = gi & ((1u << stride_log) - 1);
    const u32 base = ((gi >> stride_log) << span_log) + off;
    V x[group];
    if constexpr (consecutive) {
      const auto* pairs = reinterpret_cast<const PairOf<V>*>(smem + tile_slot(base));
#pragma unroll
      for (int e = 0; e < group; e += 2) {
        const PairOf<V> pair = pairs[e / 2];
        x[e] = pair.lo;
        x[e + 1] = pair.hi;
      }
    } else {
      const V* words = smem + tile_slot(base);
#pragma unroll
      for (int e = 0; e < group; ++e) x[e] = words[tile_slot(static_cast<u32>(e) << stride_log)];
    }
#pragma unroll
    for (int s = 0; s < R; ++s) {
      const int ts_log = FORWARD ? T0_LOG - s : T0_LOG + s;
      const int half = FORWARD ? 1 << (R - 1 - s) : 1 << s;
      const int distinct = FORWARD ? 1 << s : 1 << (R - 1 - s);
      const u32 first = (1u << (LOG_TILE - 1 - ts_log)) + (base >> (ts_log + 1));
      Tw w[group / 2];
      if (std::is_same_v<Tw, double> && distinct >= 2) {
        const auto* pairs = reinterpret_cast<const PairOf<Tw>*>(tw + first);
#pragma unroll
        for (int h = 0; h < distinct; h += 2) {
          const PairOf<Tw> pair = pairs[h / 2];
          w[h] = pair.lo;
          w[h + 1] = pair.hi;
        }
      } else {
#pragma unroll
        for (int h = 0; h < distinct; ++h) w[h] = tw[first + h];
      }
#pragma unroll
      for (int e = 0; e < group; ++e) {
        if (e & half) continue;
        const int h = FORWARD ? e >> (R - s) : e >> (s + 1);
        if constexpr (FORWARD) {
          a.forward(x[e], x[e + half], w[h]);
        } else {
          a.inverse(x[e], x[e + half], w[h]);
        }
      }
    }
    if constexpr (!FORWARD) a.settle(x[0]);  // the sum of the group's 2^R inputs
    if constexpr (consecutive && data_dst) {
      auto* pairs = reinterpret_cast<PairOf<V>*>(dst.data + tile_slot(base));
#pragma unroll
      for (int e = 0; e < group; e += 2) pairs[e / 2] = PairOf<V>{x[e], x[e + 1]};
    } else if constexpr (data_dst) {
      V* words = dst.data + tile_slot(base);
#pragma unroll
      for (int e = 0; e < group; ++e) words[tile_slot(static_cast<u32>(e) << stride_log)] = x[e];
    } else {
#pragma unroll
      for (int e = 0; e < group; ++e) dst(base + (static_cast<u32>(e) << stride_log), x[e]);
    }
  }
}

// Every pass of one tile, from shared memory; the last writes `store`.
template <bool FORWARD, int LOG_TILE, int W, int DONE, class A, class Store>
__device__ __forceinline__ void tile_passes(typename A::Value* smem, const typename A::Twiddle* tw, const A& a,
                                            Store store) {
  if constexpr (DONE < LOG_TILE) {
    constexpr int remaining = LOG_TILE - DONE;
    constexpr int rmax = Tile<LOG_TILE, W>::max_radix_log;
    constexpr int first_forward = Tile<LOG_TILE, W>::first_forward_log;
    constexpr int R = FORWARD ? (DONE == 0 ? first_forward : rmax) : (remaining < rmax ? remaining : rmax);
    constexpr bool last = DONE + R == LOG_TILE;
    constexpr int t0_log = FORWARD ? LOG_TILE - 1 - DONE : DONE;
    if constexpr (DONE != 0) __syncthreads();
    if constexpr (last) {
      pass<FORWARD, R, t0_log, LOG_TILE, W>(smem, tw, a, store);
    } else {
      pass<FORWARD, R, t0_log, LOG_TILE, W>(smem, tw, a, TileData<typename A::Value>{smem});
    }
    tile_passes<FORWARD, LOG_TILE, W, DONE + R>(smem, tw, a, store);
  }
}

// The first forward pass of a tile on the words a thread loaded (word r at
// tile position threadIdx.x + r threads): that pass's groups (distances
// TILE/2 .. TILE/2^R) are exactly such words, so it needs no round trip
// through shared memory and no barrier; its 2^R - 1 twiddles are the tile
// twiddles 1 .. 2^R - 1, read from the table.
template <int LOG_TILE, int W, class A>
__device__ __forceinline__ void first_forward_pass(typename A::Value (&x)[W],
                                                   const typename A::Twiddle* __restrict__ roots, u32 n1, u32 tile,
                                                   const A& a) {
  constexpr int R = Tile<LOG_TILE, W>::first_forward_log;
  static_assert(R < LOG_TILE);
  constexpr int group = 1 << R;
  constexpr int groups = W / group;  // per thread
  typename A::Twiddle w[group];      // w[0] unused
#pragma unroll
  for (int j = 1; j < group; ++j) w[j] = roots[tile_twiddle_position(static_cast<u32>(j), n1, tile)];
#pragma unroll
  for (int g = 0; g < groups; ++g) {
#pragma unroll
    for (int s = 0; s < R; ++s) {
      const int half = 1 << (R - 1 - s);
#pragma unroll
      for (int e = 0; e < group; ++e) {
        if (e & half) continue;
        a.forward(x[g + e * groups], x[g + (e + half) * groups], w[(1 << s) + (e >> (R - s))]);
      }
    }
  }
}

// Every forward stage of tile `tile` of a limb from a thread's loaded words
// (word r at tile position threadIdx.x + r threads, in [0, 4q)), into s.data
// and then `store`, as tile_passes; the first pass in registers.
template <int LOG_TILE, int W, class A, class Store>
__device__ __forceinline__ void forward_tile(const TileSmem<LOG_TILE, W, A>& s,
                                             const typename A::Twiddle* __restrict__ roots, u32 n1, u32 tile,
                                             const A& a, const u64 (&words)[W], Store store) {
  using T = Tile<LOG_TILE, W>;
  const TileTwiddleLoad<LOG_TILE, W, typename A::Twiddle> twiddles(roots, n1, tile);
  typename A::Value x[W];
#pragma unroll
  for (int r = 0; r < W; ++r) x[r] = a.from_word(words[r]);
  first_forward_pass<LOG_TILE, W>(x, roots, n1, tile, a);
  twiddles.stash(s.tw);
#pragma unroll
  for (int r = 0; r < W; ++r) s.data[tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = x[r];
  tile_passes<true, LOG_TILE, W, T::first_forward_log>(s.data, s.tw, a, store);  // starts at a barrier
}

// The order of a tile pass's block rows. Default: row y is batch limb y.
// by_prime_limbs = L > 0, for a two-component batch (limb b = component x
// L + i): c0 and c1 of one prime on neighbouring rows, so the second row's
// blocks read the prime's tile twiddles from L2 (at 2^16 the inverse tile
// pass of a ciphertext reads 17.5 MB less from DRAM, the forward 8.9 MB;
// docs/perf/cuda.md, v26). A permutation of [0, count) only when count
// == 2 L: check_tile_rows.
struct TileRows {
  int by_prime_limbs = 0;
  __device__ int limb(u32 y) const {
    if (by_prime_limbs == 0) return static_cast<int>(y);
    return static_cast<int>((y & 1u) * static_cast<u32>(by_prime_limbs) + (y >> 1));
  }
};

// The batch limb of a tile block: its row, in the batch's TileRows order
// where it has one (a member `rows`).
template <class Batch>
__device__ __forceinline__ int tile_limb(const Batch& batch) {
  if constexpr (requires { batch.rows.limb(0u); }) {
    return batch.rows.limb(blockIdx.y);
  } else {
    return static_cast<int>(blockIdx.y);
  }
}

// Forward stages with distance < TILE. SINGLE: the whole transform (reads
// batch.load); otherwise reads batch.inter, written by forward_columns.
template <int LOG_TILE, bool SINGLE, int W, class Batch>
__device__ __forceinline__ void forward_tiles_body(const NttTables& t, const Batch& batch) {
  using T = Tile<LOG_TILE, W>;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int b = tile_limb(batch);
  if (batch.skip(b)) return;
  const int limb = batch.prime(b);
  const u32 n1 = (1u << t.log_n) >> LOG_TILE;
  const u32 tile_base = blockIdx.x * T::size;
  const u64* inter = SINGLE ? nullptr : batch.inter(b);
  u64 words[W];
#pragma unroll
  for (int r = 0; r < W; ++r) {
    const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
    if constexpr (SINGLE) {
      words[r] = batch.load(b, tile_base + i);
    } else {
      words[r] = inter[tile_base + i];
    }
  }
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    const TileSmem<LOG_TILE, W, A> s(dynamic_smem);
    forward_tile(s, A::roots(t, limb), n1, blockIdx.x, a, words, TileData<typename A::Value>{s.data});
    typename Batch::Aux aux[W];
#pragma unroll
    for (int r = 0; r < W; ++r) aux[r] = batch.fetch(b, tile_base + threadIdx.x + static_cast<u32>(r * T::threads));
    __syncthreads();
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
      batch.store(b, tile_base + i, a.forward_word(s.data[tile_slot(i)]), aux[r]);
    }
  });
}

template <int LOG_TILE, bool SINGLE, int W, class Batch>
__global__ void __launch_bounds__(Tile<LOG_TILE, W>::threads) forward_tiles(NttTables t, Batch batch) {
  forward_tiles_body<LOG_TILE, SINGLE, W>(t, batch);
}

// The same held to three blocks per SM (80 registers), for the 2^11-word
// tiles of N = 2^16: left to itself ptxas gives some batches 92-100
// registers and two blocks (rescale's kept-limb batch: 2^16 rescale 86.5 ->
// 93.8 us). An explicit minimum of one block is not the same as none: it
// moves other tiles' counts too, so the other shapes keep the plain bound.
template <int LOG_TILE, bool SINGLE, int W, class Batch>
__global__ void __launch_bounds__(Tile<LOG_TILE, W>::threads, 3) forward_tiles_three_per_sm(NttTables t, Batch batch) {
  forward_tiles_body<LOG_TILE, SINGLE, W>(t, batch);
}

// Inverse stages with distance < TILE. SINGLE: the whole transform, times
// n^-1, to batch.store; otherwise to batch.inter for inverse_columns.
template <int LOG_TILE, bool SINGLE, int W, class Batch>
__global__ void __launch_bounds__(Tile<LOG_TILE, W>::threads) inverse_tiles(NttTables t, Batch batch) {
  using T = Tile<LOG_TILE, W>;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int b = tile_limb(batch);
  if (batch.skip(b)) return;
  const int limb = batch.prime(b);
  const u32 n1 = (1u << t.log_n) >> LOG_TILE;
  const u32 tile_base = blockIdx.x * T::size;
  u64 words[W];
#pragma unroll
  for (int r = 0; r < W; ++r) words[r] = batch.load(b, tile_base + threadIdx.x + static_cast<u32>(r * T::threads));
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    const TileSmem<LOG_TILE, W, A> s(dynamic_smem);
    load_tile_twiddles<LOG_TILE, W>(s.tw, A::inverse_roots(t, limb), n1, blockIdx.x);
#pragma unroll
    for (int r = 0; r < W; ++r) s.data[tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = a.from_word(words[r]);
    __syncthreads();
    [[maybe_unused]] u64* inter = SINGLE ? nullptr : batch.inter(b);
    // The last inverse pass has the largest stride: its direct stores coalesce.
    auto store = [&](u32 i, typename A::Value v) {
      if constexpr (SINGLE) {
        batch.store(b, tile_base + i, a.times_inv_n(v), batch.fetch(b, tile_base + i));
      } else {
        inter[tile_base + i] = a.inverse_inter(v);
      }
    };
    tile_passes<false, LOG_TILE, W, 0>(s.data, s.tw, a, store);
  });
}

// Column stages by compile-time recursion, so every index is a constant and
// x stays in registers. Forward: stage with M blocks (distance N1 / 2M);
// inverse: distance TK (N1 / 2TK blocks). tw holds roots[1 .. N1).
template <int N1, int M, class A>
__device__ __forceinline__ void forward_column_stages(typename A::Value (&x)[N1], const typename A::Twiddle* tw,
                                                      const A& a) {
  if constexpr (M < N1) {
    constexpr int tk = N1 / (2 * M);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const typename A::Twiddle w = tw[M + i];
#pragma unroll
      for (int jj = 0; jj < tk; ++jj) a.forward(x[2 * i * tk + jj], x[2 * i * tk + jj + tk], w);
    }
    forward_column_stages<N1, 2 * M>(x, tw, a);
  }
}

template <int N1, int TK, class A>
__device__ __forceinline__ void inverse_column_stages(typename A::Value (&x)[N1], const typename A::Twiddle* tw,
                                                      const A& a) {
  if constexpr (TK < N1) {
    constexpr int m = N1 / (2 * TK);
#pragma unroll
    for (int i = 0; i < m; ++i) {
      const typename A::Twiddle w = tw[m + i];
#pragma unroll
      for (int jj = 0; jj < TK; ++jj) a.inverse(x[2 * i * TK + jj], x[2 * i * TK + jj + TK], w);
    }
    if constexpr (TK == 4) {  // words 8i are sums of eight inputs
#pragma unroll
      for (int k = 0; k < N1; k += 8) a.settle(x[k]);
    }
    inverse_column_stages<N1, 2 * TK>(x, tw, a);
  }
}

// The first N1 twiddles of key limb `limb` for arithmetic A, into shared
// memory sized for N1 pairs (threads 0 .. N1-1 of the calling group store).
template <int N1, class A>
__device__ __forceinline__ typename A::Twiddle* column_twiddles(TwiddlePair* storage, const typename A::Twiddle* roots,
                                                                u32 thread) {
  auto* tw = reinterpret_cast<typename A::Twiddle*>(storage);
  if (thread < N1) tw[thread] = roots[thread];
  return tw;
}

// Forward stages with distance >= TILE, N1 words per thread.
template <int N1, class Batch>
__global__ void __launch_bounds__(column_threads, column_min_blocks<N1>) forward_columns(NttTables t, Batch batch) {
  __shared__ TwiddlePair tw_storage[N1];
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;
  const int limb = batch.prime(b);
  const u32 n2 = (1u << t.log_n) / N1;
  const u32 j = blockIdx.x * column_threads + threadIdx.x;
  u64 words[N1];
#pragma unroll
  for (int k = 0; k < N1; ++k) words[k] = batch.load(b, static_cast<u32>(k) * n2 + j);
  u64* inter = batch.inter(b);
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    const auto* tw = column_twiddles<N1, A>(tw_storage, A::roots(t, limb), threadIdx.x);
    __syncthreads();
    typename A::Value x[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) x[k] = a.from_word(words[k]);
    forward_column_stages<N1, 1>(x, tw, a);
#pragma unroll
    for (int k = 0; k < N1; ++k) inter[static_cast<u32>(k) * n2 + j] = a.forward_inter(x[k]);
  });
}

// Inverse stages with distance >= TILE, then n^-1, N1 words per thread.
template <int N1, class Batch>
__global__ void __launch_bounds__(column_threads, column_min_blocks<N1>) inverse_columns(NttTables t, Batch batch) {
  __shared__ TwiddlePair tw_storage[N1];
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;
  const int limb = batch.prime(b);
  const u32 n2 = (1u << t.log_n) / N1;
  const u32 j = blockIdx.x * column_threads + threadIdx.x;
  const u64* inter = batch.inter(b);
  u64 words[N1];
#pragma unroll
  for (int k = 0; k < N1; ++k) words[k] = inter[static_cast<u32>(k) * n2 + j];
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    const auto* tw = column_twiddles<N1, A>(tw_storage, A::inverse_roots(t, limb), threadIdx.x);
    __syncthreads();
    typename A::Value x[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) x[k] = a.from_word(words[k]);
    inverse_column_stages<N1, 1>(x, tw, a);
    typename Batch::Aux aux[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) aux[k] = batch.fetch(b, static_cast<u32>(k) * n2 + j);
#pragma unroll
    for (int k = 0; k < N1; ++k) batch.store(b, static_cast<u32>(k) * n2 + j, a.times_inv_n(x[k]), aux[k]);
  });
}

// An inverse NTT, a coefficient-wise change of prime and the first half of a
// forward NTT in one launch: the inverse column stages of a source limb
// (written by inverse_tiles), n^-1, an element-wise map to the target prime,
// then the forward column stages with the target's twiddles; forward_tiles
// follows. Every block of batch b redoes its source column's inverse stages
// (cheap next to a launch), so one grid covers every target limb. A Fused:
//   bool skip(int b); int source_prime(int b); const u64* source(int b);
//   int prime(int b); u64* inter(int b);
//   Map map(int b), Map::operator()(u64 x): x in [0, q_source) -> [0, q_target)
template <int N1, class Fused>
__global__ void __launch_bounds__(column_threads) inverse_map_forward_columns(NttTables t, Fused f) {
  __shared__ TwiddlePair itw_storage[N1];
  __shared__ TwiddlePair ftw_storage[N1];
  const int b = static_cast<int>(blockIdx.y);
  if (f.skip(b)) return;
  const int from = f.source_prime(b);
  const int to = f.prime(b);
  const u32 n2 = (1u << t.log_n) / N1;
  const u32 j = blockIdx.x * column_threads + threadIdx.x;
  const u64* src = f.source(b);
  u64 words[N1];
#pragma unroll
  for (int k = 0; k < N1; ++k) words[k] = src[static_cast<u32>(k) * n2 + j];
  with_arith(t, to, [&](auto a) {
    using A = decltype(a);
    column_twiddles<N1, A>(ftw_storage, A::roots(t, to), threadIdx.x);
  });
  const auto map = f.map(b);
  with_arith(t, from, [&](auto a) {
    using A = decltype(a);
    const auto* itw = column_twiddles<N1, A>(itw_storage, A::inverse_roots(t, from), threadIdx.x);
    __syncthreads();
    typename A::Value x[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) x[k] = a.from_word(words[k]);
    inverse_column_stages<N1, 1>(x, itw, a);
#pragma unroll
    for (int k = 0; k < N1; ++k) words[k] = map(a.times_inv_n(x[k]));
  });
  u64* inter = f.inter(b);
  with_arith(t, to, [&](auto a) {
    using A = decltype(a);
    const auto* ftw = reinterpret_cast<const typename A::Twiddle*>(ftw_storage);
    typename A::Value x[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) x[k] = a.from_word(words[k]);
    forward_column_stages<N1, 1>(x, ftw, a);
#pragma unroll
    for (int k = 0; k < N1; ++k) inter[static_cast<u32>(k) * n2 + j] = a.forward_inter(x[k]);
  });
}

// The same with each source column's inverse stages done once per block and
// shared by the targets of that source (the batches of one source are
// consecutive: b = source x targets + g). Block (C columns) x (targets):
// the source columns go to shared memory; every inverse stage is one
// butterfly per thread, pair p of column c on the threads (c, g) with
// g = p mod targets (a barrier between stages); n^-1 goes with the last
// stage's store. Then thread (c, g) maps column c to target g, runs its
// forward stages in registers and writes batch b's limb. The inverse
// butterflies are done once instead of once per target, and a thread's
// dependent chain is log2 N1 + N1/2 log2 N1 butterflies instead of
// N1 log2 N1 (ModUp at 2^14: 36 instead of 64).
// At most 112 registers and 8 warps per block: two blocks per SM (4 warps on
// each of the SM's 4 register files of 16K words), so ModUp's 256 blocks at
// 2^14 (8 digits x 8 targets) run in one wave. Grids under 128 blocks take
// the old kernel (at 2^14, ModDown's and rescale's 64 blocks would leave half
// the SMs idle).
constexpr int shared_columns = 32;     // C: one warp of columns per target
constexpr int shared_max_targets = 8;  // larger groups take inverse_map_forward_columns

template <int N1, class Fused>
__global__ void __maxnreg__(112) inverse_once_map_forward_columns(NttTables t, Fused f) {
  constexpr int C = shared_columns;
  static_assert(N1 <= C);
  __shared__ TwiddlePair itw_storage[N1];
  __shared__ TwiddlePair ftw_storage[shared_max_targets][N1];
  __shared__ u64 columns[N1][C];  // words, or A::Values during the inverse stages
  const int g = static_cast<int>(threadIdx.y);
  const int targets = static_cast<int>(blockDim.y);
  const int b = static_cast<int>(blockIdx.y) * targets + g;
  const int from = f.source_prime(b);
  const int to = f.prime(b);
  const u32 n2 = (1u << t.log_n) / N1;
  const u32 c = threadIdx.x;
  const u32 column0 = blockIdx.x * C;
  // The source's N1 x C words, coalesced (every batch of the block has the same source).
  constexpr int words = N1 * C;
  constexpr int per_thread = (words + 31) / 32;  // at most words / 32 per thread (targets >= 1)
  const int threads = C * targets;
  u64 v[per_thread];
  int count = 0;
  {
    const u64* src = f.source(b);
#pragma unroll
    for (int r = 0; r < per_thread; ++r) {
      const int i = g * C + static_cast<int>(c) + r * threads;
      if (i < words) {
        v[r] = src[static_cast<u32>(i / C) * n2 + column0 + static_cast<u32>(i % C)];
        count = r + 1;
      }
    }
  }
  with_arith(t, to, [&](auto a) {  // uniform over the warp: one target per warp
    using A = decltype(a);
    column_twiddles<N1, A>(ftw_storage[g], A::roots(t, to), c);
  });
  with_arith(t, from, [&](auto a) {
    using A = decltype(a);
    using V = typename A::Value;
    auto* values = reinterpret_cast<V(*)[C]>(columns);
    const typename A::Twiddle* itw = reinterpret_cast<const typename A::Twiddle*>(itw_storage);
    if (g == 0) column_twiddles<N1, A>(itw_storage, A::inverse_roots(t, from), c);
#pragma unroll
    for (int r = 0; r < per_thread; ++r) {
      const int i = g * C + static_cast<int>(c) + r * threads;
      if (r < count) values[i / C][i % C] = a.from_word(v[r]);
    }
    __syncthreads();
    // Stage with distance tk (1, 2, .. N1/2): pair p = (block i, offset jj),
    // words 2 i tk + jj and + tk, twiddle itw[N1 / (2 tk) + i].
#pragma unroll
    for (int tk = 1; tk < N1; tk *= 2) {
      const bool last = 2 * tk == N1;
      for (int p = g; p < N1 / 2; p += targets) {
        const int i = p / tk;
        const int jj = p % tk;
        const int lo = 2 * i * tk + jj;
        V x0 = values[lo][c];
        V x1 = values[lo + tk][c];
        a.inverse(x0, x1, itw[N1 / (2 * tk) + i]);
        if (last) {
          columns[lo][c] = a.times_inv_n(x0);
          columns[lo + tk][c] = a.times_inv_n(x1);
        } else {
          if (tk == 4 && jj == 0) a.settle(x0);  // the sum of eight inputs
          values[lo][c] = x0;
          values[lo + tk][c] = x1;
        }
      }
      __syncthreads();
    }
  });
  if (f.skip(b)) return;
  const auto map = f.map(b);
  u64 mapped[N1];
#pragma unroll
  for (int k = 0; k < N1; ++k) mapped[k] = map(columns[k][c]);
  u64* inter = f.inter(b);
  const u32 j = column0 + c;
  with_arith(t, to, [&](auto a) {
    using A = decltype(a);
    typename A::Value x[N1];
#pragma unroll
    for (int k = 0; k < N1; ++k) x[k] = a.from_word(mapped[k]);
    forward_column_stages<N1, 1>(x, reinterpret_cast<const typename A::Twiddle*>(ftw_storage[g]), a);
#pragma unroll
    for (int k = 0; k < N1; ++k) inter[static_cast<u32>(k) * n2 + j] = a.forward_inter(x[k]);
  });
}

// Tile size and column count for a ring degree.
struct Shape {
  int log_tile;
  int n1;
};

// Tiles of 2^10 words up to N = 2^15 (more, shorter blocks: small batches are
// latency-bound), 2^11 at 2^16, 2^12 at 2^17; at most 32 columns.
inline Shape shape_for(int log_n) {
  if (log_n <= 10) return {log_n, 1};
  if (log_n <= 15) return {10, 1 << (log_n - 10)};
  if (log_n == 16) return {11, 32};
  return {12, 1 << (log_n - 12)};
}

// Raises a kernel's dynamic shared memory limit to at least `bytes`.
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, int bytes) {
  allow_dynamic_smem_bytes(reinterpret_cast<const void*>(kernel), bytes);
}

template <int N1, class Batch>
void launch_columns(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  const unsigned n2 = (1u << t.log_n) / N1;
  const dim3 grid(n2 / column_threads, static_cast<unsigned>(count));
  if (forward) {
    forward_columns<N1><<<grid, column_threads, 0, stream>>>(t, batch);
    check_launch("ntt forward_columns");
  } else {
    inverse_columns<N1><<<grid, column_threads, 0, stream>>>(t, batch);
    check_launch("ntt inverse_columns");
  }
}

// Refuses, before anything is launched, a batch whose TileRows order is
// not a permutation of its `count` rows (a bug in the caller).
template <class Batch>
void check_tile_rows(const Batch& batch, int count) {
  if constexpr (requires { batch.rows.by_prime_limbs; }) {
    const int limbs = batch.rows.by_prime_limbs;
    if (limbs != 0 && count != 2 * limbs) {
      throw_cuda_error(
          cudaErrorInvalidValue,
          "ntt of " + std::to_string(count) + " limbs with its tile rows by prime for 2 x " + std::to_string(limbs));
    }
  }
}

template <int LOG_TILE, bool SINGLE, int W, class Batch>
void launch_tiles_w(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  using T = Tile<LOG_TILE, W>;
  const dim3 grid((1u << t.log_n) >> LOG_TILE, static_cast<unsigned>(count));
  if (forward) {
    auto launch = [&](auto kernel) {
      allow_dynamic_smem(kernel, T::smem_bytes);
      kernel<<<grid, T::threads, T::smem_bytes, stream>>>(t, batch);
      check_launch("ntt forward_tiles");
    };
    if constexpr (LOG_TILE == 11 && W == 8) {
      launch(forward_tiles_three_per_sm<LOG_TILE, SINGLE, W, Batch>);
    } else {
      launch(forward_tiles<LOG_TILE, SINGLE, W, Batch>);
    }
  } else {
    allow_dynamic_smem(inverse_tiles<LOG_TILE, SINGLE, W, Batch>, T::smem_bytes);
    inverse_tiles<LOG_TILE, SINGLE, W><<<grid, T::threads, T::smem_bytes, stream>>>(t, batch);
    check_launch("ntt inverse_tiles");
  }
}

// Launches of at most this many tile blocks run 4 words per thread (twice
// the threads, half the dependent chain); larger ones 8. Only for 2^10-word
// tiles.
inline bool small_tile_launch(unsigned blocks) { return blocks <= 640; }

template <int LOG_TILE, bool SINGLE, class Batch>
void launch_tiles(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  const unsigned blocks = ((1u << t.log_n) >> LOG_TILE) * static_cast<unsigned>(count);
  if constexpr (LOG_TILE == 10) {
    if (small_tile_launch(blocks)) {
      launch_tiles_w<LOG_TILE, SINGLE, 4>(forward, t, batch, count, stream);
      return;
    }
  }
  launch_tiles_w<LOG_TILE, SINGLE, 8>(forward, t, batch, count, stream);
}

// No 16-column pass: at 2^14, the one degree with 16 columns, forward and
// inverse take the cluster kernels (cluster_ntt), and the fused column
// kernels (inverse_map_forward) do the column stages of the other paths.
template <class Batch>
void launch_columns_any(bool forward, int n1, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  switch (n1) {
    case 2: launch_columns<2>(forward, t, batch, count, stream); break;
    case 4: launch_columns<4>(forward, t, batch, count, stream); break;
    case 8: launch_columns<8>(forward, t, batch, count, stream); break;
    case 32: launch_columns<32>(forward, t, batch, count, stream); break;
    default: throw_cuda_error(cudaErrorInvalidValue, "ntt with " + std::to_string(n1) + " columns");
  }
}

template <bool SINGLE, class Batch>
void launch_tiles_any(bool forward, int log_tile, const NttTables& t, const Batch& batch, int count,
                      cudaStream_t stream) {
  switch (log_tile) {
    case 10: launch_tiles<10, SINGLE>(forward, t, batch, count, stream); break;
    case 11: launch_tiles<11, SINGLE>(forward, t, batch, count, stream); break;
    case 12: launch_tiles<12, SINGLE>(forward, t, batch, count, stream); break;
    default: throw_cuda_error(cudaErrorInvalidValue, "ntt tile of 2^" + std::to_string(log_tile) + " words");
  }
}

// The one-launch transforms of ntt_cluster.cuh (included at the end).
inline bool cluster_ntt(int log_n);
template <class Batch>
void launch_cluster(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream);
// ... and of ntt_wide_cluster.cuh (N = 2^16, small batches).
template <class Batch>
bool launch_wide_cluster(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream);

// Forward NTT of `count` limbs described by `batch`.
template <class Batch>
void forward(const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (count <= 0) return;
  check_tile_rows(batch, count);
  if (launch_wide_cluster(true, t, batch, count, stream)) return;
  const Shape s = shape_for(t.log_n);
  if (cluster_ntt(t.log_n)) {
    launch_cluster(true, t, batch, count, stream);
  } else if (s.n1 == 1) {
    launch_tiles_any<true>(true, s.log_tile, t, batch, count, stream);
  } else {
    launch_columns_any(true, s.n1, t, batch, count, stream);
    launch_tiles_any<false>(true, s.log_tile, t, batch, count, stream);
  }
}

// Inverse NTT (times n^-1) of `count` limbs described by `batch`.
template <class Batch>
void inverse(const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (count <= 0) return;
  check_tile_rows(batch, count);
  if (launch_wide_cluster(false, t, batch, count, stream)) return;
  const Shape s = shape_for(t.log_n);
  if (cluster_ntt(t.log_n)) {
    launch_cluster(false, t, batch, count, stream);
  } else if (s.n1 == 1) {
    launch_tiles_any<true>(false, s.log_tile, t, batch, count, stream);
  } else {
    launch_tiles_any<false>(false, s.log_tile, t, batch, count, stream);
    launch_columns_any(false, s.n1, t, batch, count, stream);
  }
}

// Whether the fused inverse_map_forward path below applies and pays: the
// degree has a column pass of at most 16 words per thread. At 2^16 (32
// columns) the column kernels are bound by arithmetic, and redoing the
// source column's inverse stages per target costs more than a launch.
inline bool fuse_columns(int log_n) {
  const int n1 = shape_for(log_n).n1;
  return n1 > 1 && n1 <= 16;
}

// The tile pass alone: inverse tiles of `batch` into batch.inter (the first
// half of an inverse NTT) / forward tiles from batch.inter (the second half
// of a forward NTT). Only after a column pass: fuse_columns, or
// forward_columns_only (see forward_in_two_passes).
template <class Batch>
void inverse_tiles_only(const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (count <= 0) return;
  check_tile_rows(batch, count);
  launch_tiles_any<false>(false, shape_for(t.log_n).log_tile, t, batch, count, stream);
}

template <class Batch>
void forward_tiles_only(const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (count <= 0) return;
  check_tile_rows(batch, count);
  launch_tiles_any<false>(true, shape_for(t.log_n).log_tile, t, batch, count, stream);
}

// The fused columns over `count` target limbs, `targets` consecutive ones per
// source (count is a multiple of targets). Only when fuse_columns.
template <class Fused>
void inverse_map_forward(const NttTables& t, const Fused& f, int count, int targets, cudaStream_t stream) {
  if (count <= 0) return;
  const int n1 = shape_for(t.log_n).n1;
  const unsigned n2 = (1u << t.log_n) / static_cast<unsigned>(n1);
  // Each source's inverse stages shared among its targets
  // (inverse_once_map_forward_columns) where the launch is large enough.
  if (targets <= shared_max_targets && count % targets == 0 && n2 % shared_columns == 0 &&
      (n2 / shared_columns) * static_cast<unsigned>(count / targets) >= 128) {
    const dim3 grid(n2 / shared_columns, static_cast<unsigned>(count / targets));
    const dim3 block(shared_columns, static_cast<unsigned>(targets));
    auto go = [&](auto kernel) {
      kernel<<<grid, block, 0, stream>>>(t, f);
      check_launch("ntt inverse_once_map_forward_columns");
    };
    switch (n1) {
      case 2: go(inverse_once_map_forward_columns<2, Fused>); break;
      case 4: go(inverse_once_map_forward_columns<4, Fused>); break;
      case 8: go(inverse_once_map_forward_columns<8, Fused>); break;
      case 16: go(inverse_once_map_forward_columns<16, Fused>); break;
      default: throw_cuda_error(cudaErrorInvalidValue, "ntt with " + std::to_string(n1) + " columns");
    }
    return;
  }
  const dim3 grid(n2 / column_threads, static_cast<unsigned>(count));
  auto go = [&](auto kernel) {
    kernel<<<grid, column_threads, 0, stream>>>(t, f);
    check_launch("ntt inverse_map_forward_columns");
  };
  switch (n1) {
    case 2: go(inverse_map_forward_columns<2, Fused>); break;
    case 4: go(inverse_map_forward_columns<4, Fused>); break;
    case 8: go(inverse_map_forward_columns<8, Fused>); break;
    case 16: go(inverse_map_forward_columns<16, Fused>); break;
    default: throw_cuda_error(cudaErrorInvalidValue, "ntt with " + std::to_string(n1) + " columns");
  }
}

// The plain batch: limb b of `in` to limb b of `out` (in-place allowed); the
// prime of limb b is b % limbs (components x limbs, limb-major).
struct PlainBatch {
  const u64* in;
  u64* out;
  u32 n;
  int limbs;
  int first_key_limb;  // key limb of limb 0
  TileRows rows{};
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return first_key_limb + b % limbs; }
  __device__ u64 load(int b, u32 pos) const { return in[static_cast<std::size_t>(b) * n + pos]; }
  __device__ u64* inter(int b) const { return out + static_cast<std::size_t>(b) * n; }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const { out[static_cast<std::size_t>(b) * n + pos] = v; }
};

}  // namespace fhelium::cuda::ntt

#include "ntt_cluster.cuh"
#include "ntt_wide_cluster.cuh"
