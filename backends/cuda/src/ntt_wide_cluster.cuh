// A whole NTT of a 2^16-word limb in one launch: a cluster of 16 blocks per
// limb (a non-portable cluster size, which the H200 allows), N = 16 x 2^12.
// Block r owns columns [256 r, 256 r + 256) for the 4 column stages and tile
// r for the 12 tile stages; words move between the two through distributed
// shared memory, so the limb crosses global memory once instead of twice
// (ntt.cuh's columns + tiles).
//
// The block's 16 x 256 column words, laid out row-major, are a 2^12-word
// tile whose first four stages (distances 2^11 .. 2^8) are exactly the
// column stages with roots 1..15: they run as two radix-4 `pass`es in shared
// memory. 512 threads of 8 words, two blocks per SM (104 KB of shared memory
// each, at most 64 registers). FpArith runs all 16 forward stages from
// canonical words without reducing in between: below q + 16 x 0.63 q < 12 q
// (ntt_arith.cuh's bound). The kernels assume clusters of exactly 16 blocks:
// launch them only through launch_wide_cluster.
#pragma once

#include <string>
#include <type_traits>

#include "ntt_cluster.cuh"

namespace fhelium::cuda::ntt {

struct WideCluster {
  static constexpr int log_n = 16;
  static constexpr int blocks = 16;
  static constexpr int log_tile = 12;
  using T = Tile<log_tile, 8>;
  static constexpr int threads = T::threads;
  static constexpr int columns = T::size / blocks;  // per block
  static constexpr int log_columns = 8;
  static_assert(columns == 1 << log_columns);
  // Shared memory: FpArith's tile twiddles in [0, 32 KB), IntArith's reach
  // 64 KB; the column buffer from 32 KB (over IntArith's upper twiddles);
  // the tile data; the column roots 0..15 (0 unused: `pass` reads 1..15).
  static constexpr int column_offset = T::size * 8;
  static constexpr int data_offset = column_offset + T::data_words * 8;
  static constexpr int roots_offset = data_offset + T::data_words * 8;
  static constexpr int column_roots = 16;  // words per column
  static constexpr int smem_bytes = roots_offset + column_roots * 16;
  static_assert(data_offset >= T::size * 16);
};

template <class A>
struct WideSmem {
  typename A::Twiddle* tw;
  typename A::Value* columns;
  typename A::Value* data;
  typename A::Twiddle* roots;
  __device__ explicit WideSmem(TwiddlePair* dynamic_smem) {
    char* base = reinterpret_cast<char*>(dynamic_smem);
    tw = reinterpret_cast<typename A::Twiddle*>(base);
    columns = reinterpret_cast<typename A::Value*>(base + WideCluster::column_offset);
    data = reinterpret_cast<typename A::Value*>(base + WideCluster::data_offset);
    roots = reinterpret_cast<typename A::Twiddle*>(base + WideCluster::roots_offset);
  }
};

// Word i of a block's column buffer (row i / 256, column i % 256 of the
// block's columns) in the limb: row x 2^12 + 256 rank + column.
__device__ __forceinline__ u32 wide_column_position(u32 rank, u32 i) {
  constexpr int lc = WideCluster::log_columns;
  return ((i >> lc) << WideCluster::log_tile) + (rank << lc) + (i & ((1u << lc) - 1));
}

// Word i of tile `rank` is row `rank` of column i, which block i / 256 holds
// at rank x 256 + i % 256 of its column buffer; and the other way round.
template <class V>
__device__ __forceinline__ V* wide_exchange_slot(V* buffer, u32 rank, u32 i) {
  constexpr int lc = WideCluster::log_columns;
  return cooperative_groups::this_cluster().map_shared_rank(buffer, i >> lc) +
         tile_slot((rank << lc) + (i & ((1u << lc) - 1)));
}

template <class Batch>
__global__ void __launch_bounds__(WideCluster::threads, 2) forward_wide_cluster(NttTables t, Batch batch) {
  using S = WideCluster;
  using T = S::T;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;  // the whole cluster returns
  arrive_on_entry();
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  const int limb = batch.prime(b);
  u64 words[T::words];
#pragma unroll
  for (int r = 0; r < T::words; ++r) {
    words[r] = batch.load(b, wide_column_position(rank, threadIdx.x + static_cast<u32>(r * T::threads)));
  }
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    using V = typename A::Value;
    const WideSmem<A> s(dynamic_smem);
    if (threadIdx.x < S::column_roots) s.roots[threadIdx.x] = A::roots(t, limb)[threadIdx.x];
#pragma unroll
    for (int r = 0; r < T::words; ++r) {
      s.columns[tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = a.from_word(words[r]);
    }
    __syncthreads();
    pass<true, 2, S::log_tile - 1, S::log_tile, T::words>(s.columns, s.roots, a, TileData<V>{s.columns});
    __syncthreads();
    wait_for_cluster_entry();
    pass<true, 2, S::log_tile - 3, S::log_tile, T::words>(
        s.columns, s.roots, a, [&](u32 i, V v) { *wide_exchange_slot(s.data, rank, i) = v; });
    cluster.sync();  // every tile is complete; the column buffers are free for the twiddles
    load_tile_twiddles<S::log_tile, T::words>(s.tw, A::roots(t, limb), S::blocks, rank);
    __syncthreads();
    tile_passes<true, S::log_tile, T::words, 0>(s.data, s.tw, a, TileData<V>{s.data});
    const u32 tile_base = rank * T::size;
    typename Batch::Aux aux[T::words];
#pragma unroll
    for (int r = 0; r < T::words; ++r) aux[r] = batch.fetch(b, tile_base + threadIdx.x + static_cast<u32>(r * T::threads));
    __syncthreads();
#pragma unroll
    for (int r = 0; r < T::words; ++r) {
      const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
      batch.store(b, tile_base + i, a.forward_word(s.data[tile_slot(i)]), aux[r]);
    }
  });
}

template <class Batch>
__global__ void __launch_bounds__(WideCluster::threads, 2) inverse_wide_cluster(NttTables t, Batch batch) {
  using S = WideCluster;
  using T = S::T;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int b = static_cast<int>(blockIdx.y);
  if (batch.skip(b)) return;
  arrive_on_entry();
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const u32 rank = cluster.block_rank();
  const int limb = batch.prime(b);
  const u32 tile_base = rank * T::size;
  u64 words[T::words];
#pragma unroll
  for (int r = 0; r < T::words; ++r) words[r] = batch.load(b, tile_base + threadIdx.x + static_cast<u32>(r * T::threads));
  with_arith(t, limb, [&](auto a) {
    using A = decltype(a);
    using V = typename A::Value;
    const WideSmem<A> s(dynamic_smem);
    load_tile_twiddles<S::log_tile, T::words>(s.tw, A::inverse_roots(t, limb), S::blocks, rank);
    if (threadIdx.x < S::column_roots) s.roots[threadIdx.x] = A::inverse_roots(t, limb)[threadIdx.x];
#pragma unroll
    for (int r = 0; r < T::words; ++r) s.data[tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = a.from_word(words[r]);
    __syncthreads();
    if constexpr (std::is_same_v<A, FpArith>) {
      // The twiddles end below the column buffers: the last pass stores remotely.
      wait_for_cluster_entry();
      tile_passes<false, S::log_tile, T::words, 0>(s.data, s.tw, a,
                                                   [&](u32 i, V v) { *wide_exchange_slot(s.columns, rank, i) = v; });
    } else {
      // IntArith's twiddles overlap the column buffers: copy once every block is done with them.
      tile_passes<false, S::log_tile, T::words, 0>(s.data, s.tw, a, TileData<V>{s.data});
      wait_for_cluster_entry();
      cluster.sync();
#pragma unroll
      for (int r = 0; r < T::words; ++r) {
        const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
        *wide_exchange_slot(s.columns, rank, i) = s.data[tile_slot(i)];
      }
    }
    cluster.sync();  // the column buffers are complete; no remote access follows
    pass<false, 2, S::log_tile - 4, S::log_tile, T::words>(s.columns, s.roots, a, TileData<V>{s.columns});
    __syncthreads();
    pass<false, 2, S::log_tile - 2, S::log_tile, T::words>(s.columns, s.roots, a, TileData<V>{s.columns});
    typename Batch::Aux aux[T::words];
#pragma unroll
    for (int r = 0; r < T::words; ++r) {
      aux[r] = batch.fetch(b, wide_column_position(rank, threadIdx.x + static_cast<u32>(r * T::threads)));
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < T::words; ++r) {
      const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
      batch.store(b, wide_column_position(rank, i), a.times_inv_n(s.columns[tile_slot(i)]), aux[r]);
    }
  });
}

// The launch configuration of `count` limbs: clusters of 16 blocks.
struct WideClusterConfig {
  cudaLaunchAttribute attribute[1]{};
  cudaLaunchConfig_t config{};
  WideClusterConfig(unsigned count, cudaStream_t stream) {
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = WideCluster::blocks;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.gridDim = dim3(WideCluster::blocks, count);
    config.blockDim = dim3(WideCluster::threads);
    config.dynamicSmemBytes = WideCluster::smem_bytes;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  WideClusterConfig(const WideClusterConfig&) = delete;  // config points into this object
  WideClusterConfig& operator=(const WideClusterConfig&) = delete;
};

// Sets a wide cluster kernel's attributes once per device; how many of its
// clusters the device runs at once (0: none, the two-kernel transform runs).
template <class Kernel>
int wide_cluster_capacity(Kernel kernel) {
  return set_up_once(reinterpret_cast<const void*>(kernel), [&] {
    // A device or driver that refuses any of this gets the two-kernel
    // transform, not an error: the refusal is cleared and recorded as 0.
    const WideClusterConfig launch(1, nullptr);
    int clusters = 0;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, WideCluster::smem_bytes) !=
            cudaSuccess ||
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return clusters;
  });
}

// Batches the wide cluster transform takes (H200, 2^16). It is latency-
// bound at two blocks per SM, and 14 clusters run at once: a ciphertext's 70
// limbs took 72 us against 63 for the two-kernel transform, ModDown's 8
// 60-bit P limbs 11 us more, while rescale's 2 dropped limbs (two tiny
// launches in the two-kernel form) gained 4.6 us.
constexpr int wide_cluster_max_limbs = 2;

// Launches the wide cluster transform when the degree is 2^16, `count` is at
// most wide_cluster_max_limbs and the device runs that many clusters at
// once; false (nothing launched) otherwise.
template <class Batch>
bool launch_wide_cluster(bool forward, const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (t.log_n != WideCluster::log_n || count > wide_cluster_max_limbs) return false;
  auto kernel = forward ? forward_wide_cluster<Batch> : inverse_wide_cluster<Batch>;
  if (count > wide_cluster_capacity(kernel)) return false;
  const WideClusterConfig launch(static_cast<unsigned>(count), stream);
  const char* what = forward ? "ntt forward_wide_cluster" : "ntt inverse_wide_cluster";
  const cudaError_t error = cudaLaunchKernelEx(&launch.config, kernel, t, batch);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // reported here, not by the next launch's check
    throw_cuda_error(error, std::string("launch of kernel ") + what);
  }
  return true;
}

// Whether forward(t, batch, count) is a column pass, then a tile pass: its
// column pass may then run apart (forward_columns_only), and
// forward_tiles_only finishes it.
inline bool forward_in_two_passes(int log_n, int count) {
  return count > wide_cluster_max_limbs && !cluster_ntt(log_n) && shape_for(log_n).n1 > 1;
}

template <class Batch>
void forward_columns_only(const NttTables& t, const Batch& batch, int count, cudaStream_t stream) {
  if (count <= 0) return;
  check_tile_rows(batch, count);  // its tile pass follows
  launch_columns_any(true, shape_for(t.log_n).n1, t, batch, count, stream);
}

}  // namespace fhelium::cuda::ntt
