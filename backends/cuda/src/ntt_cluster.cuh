// A whole NTT of a limb in one launch: a cluster of 8 blocks per limb, the
// column stages and the tile stages exchanging words through distributed
// shared memory instead of global memory (N = 8 x TILE). Forward: block r
// runs the 3 column stages of columns [r C, r C + C) (C = TILE / 8, one
// column of 8 words per thread on the first C threads), sends word k of
// each column to block k, and after the cluster barrier runs the tile
// stages of tile r (4 words per thread: with one or two blocks per SM, the
// blocks' dependent chains are the whole time, and twice the threads halve
// them).
// Inverse: the tile stages first, then the columns. Same Batch contract,
// arithmetic and results as the two-kernel transform in ntt.cuh; one launch
// instead of two, and no round trip through memory between them.
#pragma once

#include <cooperative_groups.h>

#include "cluster_entry.cuh"
#include "ntt.cuh"

namespace fhelium::cuda::ntt {

constexpr int cluster_blocks = 8;

template <int LOG_N>
struct ClusterShape {
  static constexpr int log_tile = LOG_N - 3;
  static constexpr int words = 4;  // per thread in the tile stages
  using T = Tile<log_tile, words>;
  static constexpr int threads = T::threads;
  static constexpr int columns = T::size / cluster_blocks;  // per block, one per thread
  static_assert(columns <= threads && columns % 32 == 0);
  // Twiddles and tile data as in Tile, then the inverse's column buffer
  // (8 rows of `columns` words).
  static constexpr int smem_bytes = T::smem_bytes + T::size * 8;
};

// Roots 1..7 of a limb (the column stages), in registers.
template <class A>
struct ColumnRoots {
  typename A::Twiddle w[cluster_blocks];
  __device__ explicit ColumnRoots(const typename A::Twiddle* roots) {
#pragma unroll
    for (int m = 1; m < cluster_blocks; ++m) w[m] = roots[m];
  }
};

// The two halves every cluster kernel is made of. Block `rank` of the
// cluster; column j = rank C + threadIdx.x belongs to the first C threads.

// The inverse transform of `limb`: `words` holds the block's W words of tile
// `rank` (thread-strided); on return the column threads hold column j's 8
// words times n^-1 (canonical). Waits for the cluster's entry before its
// first remote store.
template <int LOG_N, class A>
__device__ __forceinline__ void cluster_inverse(const NttTables& t, int limb, const A& a, TwiddlePair* dynamic_smem,
                                                const u64 (&words)[ClusterShape<LOG_N>::words],
                                                u64 (&column)[cluster_blocks]) {
  using S = ClusterShape<LOG_N>;
  using T = typename S::T;
  using V = typename A::Value;
  constexpr int C = S::columns;
  constexpr int W = S::words;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  const TileSmem<S::log_tile, W, A> s(dynamic_smem);
  V* rows = reinterpret_cast<V*>(reinterpret_cast<char*>(dynamic_smem) + T::smem_bytes);  // [8][C]
  load_tile_twiddles<S::log_tile, W>(s.tw, A::inverse_roots(t, limb), cluster_blocks, rank);
#pragma unroll
  for (int r = 0; r < W; ++r) s.data[tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = a.from_word(words[r]);
  __syncthreads();
  wait_for_cluster_entry();
  // Word i of tile `rank` is row `rank` of column i, which block i / C owns.
  tile_passes<false, S::log_tile, W, 0>(s.data, s.tw, a, [&](u32 i, V v) {
    cluster.map_shared_rank(rows, i / C)[rank * C + i % C] = v;
  });
  cluster.sync();  // the rows are complete; every block is done with its tile and twiddles
  if (threadIdx.x >= C) return;  // whole warps
  const ColumnRoots<A> roots(A::inverse_roots(t, limb));
  V x[cluster_blocks];
#pragma unroll
  for (int k = 0; k < cluster_blocks; ++k) x[k] = rows[k * C + threadIdx.x];
  inverse_column_stages<cluster_blocks, 1>(x, roots.w, a);
#pragma unroll
  for (int k = 0; k < cluster_blocks; ++k) column[k] = a.times_inv_n(x[k]);
}

// The forward transform of `limb` from column j's 8 canonical words (column
// threads), through out.fetch and out.store of batch b. ENTRY_WAIT: the
// kernel has not yet waited for the cluster's entry.
template <int LOG_N, bool ENTRY_WAIT, class A, class Out>
__device__ __forceinline__ void cluster_forward(const NttTables& t, int limb, const A& a, TwiddlePair* dynamic_smem,
                                                const u64 (&column)[cluster_blocks], const Out& out, int b) {
  using S = ClusterShape<LOG_N>;
  using T = typename S::T;
  using V = typename A::Value;
  constexpr int C = S::columns;
  constexpr int W = S::words;
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  const bool column_thread = threadIdx.x < C;  // whole warps
  const TileSmem<S::log_tile, W, A> s(dynamic_smem);
  // The tile's twiddles load while the column stages run (stored after them):
  // the column roots' loads do not wait behind the twiddles' round trip.
  const TileTwiddleLoad<S::log_tile, W, typename A::Twiddle> twiddles(A::roots(t, limb), cluster_blocks, rank);
  V x[cluster_blocks];
  if (column_thread) {
    const ColumnRoots<A> roots(A::roots(t, limb));
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) x[k] = a.from_word(column[k]);
    forward_column_stages<cluster_blocks, 1>(x, roots.w, a);
  }
  twiddles.stash(s.tw);
  if constexpr (ENTRY_WAIT) wait_for_cluster_entry();
  if (column_thread) {
    const u32 j = rank * C + threadIdx.x;
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) cluster.map_shared_rank(s.data, k)[tile_slot(j)] = x[k];
  }
  cluster.sync();  // every block's tile is complete; no remote access follows
  tile_passes<true, S::log_tile, W, 0>(s.data, s.tw, a, TileData<V>{s.data});
  const u32 tile_base = rank * T::size;
  typename Out::Aux aux[W];
#pragma unroll
  for (int r = 0; r < W; ++r) aux[r] = out.fetch(b, tile_base + threadIdx.x + static_cast<u32>(r * T::threads));
  __syncthreads();
#pragma unroll
  for (int r = 0; r < W; ++r) {
    const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
    out.store(b, tile_base + i, a.forward_word(s.data[tile_slot(i)]), aux[r]);
  }
}

// Held to two blocks per SM (64 registers): v21's tile layout otherwise gave
// ModDown's lifted batch 76 registers and one block (2^14 key switch 48.4 ->
// 51.4 us).
template <int LOG_N, class Batch>
__global__ void __cluster_dims__(cluster_blocks, 1, 1) __launch_bounds__(ClusterShape<LOG_N>::threads, 2)
    forward_cluster(NttTables t, Batch batch) {
  using S = ClusterShape<LOG_N>;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;  // the whole cluster returns
  arrive_on_entry();
  const int limb = batch.prime(b);
  const u32 j = cooperative_groups::this_cluster().block_rank() * S::columns + threadIdx.x;
  u64 column[cluster_blocks];
  if (threadIdx.x < S::columns) {
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) column[k] = batch.load(b, static_cast<u32>(k) * S::T::size + j);
  }
  with_arith(t, limb, [&](auto a) { cluster_forward<LOG_N, true>(t, limb, a, dynamic_smem, column, batch, b); });
}

template <int LOG_N, class Batch>
__global__ void __cluster_dims__(cluster_blocks, 1, 1) __launch_bounds__(ClusterShape<LOG_N>::threads)
    inverse_cluster(NttTables t, Batch batch) {
  using S = ClusterShape<LOG_N>;
  using T = typename S::T;
  extern __shared__ TwiddlePair dynamic_smem[];
  const u32 rank = cooperative_groups::this_cluster().block_rank();
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;
  arrive_on_entry();
  const int limb = batch.prime(b);
  u64 words[S::words];
#pragma unroll
  for (int r = 0; r < S::words; ++r) {
    words[r] = batch.load(b, rank * T::size + threadIdx.x + static_cast<u32>(r * T::threads));
  }
  u64 column[cluster_blocks];
  with_arith(t, limb, [&](auto a) { cluster_inverse<LOG_N>(t, limb, a, dynamic_smem, words, column); });
  if (threadIdx.x >= S::columns) return;
  const u32 j = rank * S::columns + threadIdx.x;
  typename Batch::Aux aux[cluster_blocks];
#pragma unroll
  for (int k = 0; k < cluster_blocks; ++k) aux[k] = batch.fetch(b, static_cast<u32>(k) * T::size + j);
#pragma unroll
  for (int k = 0; k < cluster_blocks; ++k) batch.store(b, static_cast<u32>(k) * T::size + j, column[k], aux[k]);
}

// An inverse NTT, a coefficient-wise change of prime and a forward NTT in
// one launch (rescale): cluster b runs the inverse transform of its source
// limb (every target limb's cluster redoes it: one launch instead of
// three), n^-1 and the map to its prime on the columns, then the forward
// transform and out's fetch and store. A Fused as for
// inverse_map_forward_columns (skip, source_prime, source, prime, map); Out
// a Batch (fetch, store) with the same numbering b.
template <int LOG_N, class Fused, class Out>
__global__ void __cluster_dims__(cluster_blocks, 1, 1) __launch_bounds__(ClusterShape<LOG_N>::threads)
    inverse_map_forward_cluster(NttTables t, Fused f, Out out) {
  using S = ClusterShape<LOG_N>;
  using T = typename S::T;
  extern __shared__ TwiddlePair dynamic_smem[];
  const u32 rank = cooperative_groups::this_cluster().block_rank();
  const int b = static_cast<int>(blockIdx.y);
  if (f.skip(b)) return;
  arrive_on_entry();
  const int from = f.source_prime(b);
  const int to = f.prime(b);
  const u64* src = f.source(b);
  u64 words[S::words];
#pragma unroll
  for (int r = 0; r < S::words; ++r) words[r] = src[rank * T::size + threadIdx.x + static_cast<u32>(r * T::threads)];
  u64 column[cluster_blocks];
  with_arith(t, from, [&](auto a) { cluster_inverse<LOG_N>(t, from, a, dynamic_smem, words, column); });
  if (threadIdx.x < S::columns) {
    const auto map = f.map(b);
#pragma unroll
    for (int k = 0; k < cluster_blocks; ++k) column[k] = map(column[k]);
  }
  with_arith(t, to, [&](auto a) { cluster_forward<LOG_N, false>(t, to, a, dynamic_smem, column, out, b); });
}

// Whether forward/inverse take the cluster kernels: at N = 2^14 (the
// two-kernel form there is latency-bound).
inline bool cluster_ntt(int log_n) { return log_n == 14; }

template <class Batch>
void launch_cluster(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  constexpr int log_n = 14;
  using S = ClusterShape<log_n>;
  const dim3 grid(cluster_blocks, static_cast<unsigned>(count));
  if (forward) {
    allow_dynamic_smem(forward_cluster<log_n, Batch>, S::smem_bytes);
    forward_cluster<log_n><<<grid, S::threads, S::smem_bytes, stream>>>(t, batch);
    check_launch("ntt forward_cluster");
  } else {
    allow_dynamic_smem(inverse_cluster<log_n, Batch>, S::smem_bytes);
    inverse_cluster<log_n><<<grid, S::threads, S::smem_bytes, stream>>>(t, batch);
    check_launch("ntt inverse_cluster");
  }
}

// The one-launch inverse, map and forward over `count` target limbs. Only
// when cluster_ntt.
template <class Fused, class Out>
void inverse_map_forward_cluster_launch(const NttTables& t, const Fused& f, const Out& out, int count,
                                        cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int log_n = 14;
  using S = ClusterShape<log_n>;
  allow_dynamic_smem(inverse_map_forward_cluster<log_n, Fused, Out>, S::smem_bytes);
  inverse_map_forward_cluster<log_n>
      <<<dim3(cluster_blocks, static_cast<unsigned>(count)), S::threads, S::smem_bytes, stream>>>(t, f, out);
  check_launch("ntt inverse_map_forward_cluster");
}

}  // namespace fhelium::cuda::ntt
