// ModUp's forward tile pass and the inner product with the key in one
// kernel, for degrees whose NTT has a separate column pass and 2^11-word
// tiles (N = 2^16), any number of primes per digit.
//
// Block (tile, slot) loads the slot's tile twiddles once, then for each
// digit j in turn: runs the forward tile pass of extended digit j (its
// column stages done by forward_columns; a digit's own slot is read from d
// in NTT form instead), multiplies the tile by both components of the key's
// digit j and adds the products to two accumulators in registers. After the
// last digit it writes the two accumulator tiles. The extended digits in
// NTT form are never written or re-read, and a tile's twiddles are read once
// for all digits instead of once per digit; the key streams in while the
// passes run (docs/perf/cuda.md, v22).
//
// The last forward pass leaves tile words 8 i .. 8 i + 7 with thread i, so
// each thread owns the same eight positions of every digit: the
// accumulators need no shared memory and no barrier.
#pragma once

#include <type_traits>

#include "automorphism.cuh"
#include "modarith.cuh"
#include "ntt.cuh"
#include "tile_inner_product_args.hpp"
#include "word_pairs.cuh"

namespace fhelium::cuda::kernels::digit_tiles {

constexpr int log_tile = 11;
using DigitTile = ntt::Tile<log_tile, 8>;
// Eight words per thread: every forward pass after the first is radix 8
// (tile_passes), so the last one covers distances 4, 2, 1 over groups of
// eight consecutive words, group i on thread i, which the accumulators rely
// on (the store's `i & 7`).
constexpr int words = DigitTile::words;
// Registers: the accumulators and the key words in flight hold 64 of them;
// the kernel takes 128 (the plain tile kernel 80), so two blocks per SM.
constexpr int blocks_per_sm = 2;

struct Args : TileInnerProduct {  // block (tile, y) computes slot slot_begin + y
  int alpha;
  int digits;
  // Always true: the next digit's tile and key go into L2 while this one
  // runs. A kernel argument, not a constant, on purpose: compiled in
  // unconditionally, the loop is scheduled differently and a 2^16
  // relinearize took 546 us instead of 528 (H200, same call).
  bool prefetch;
};

// Sums of products x k over digits for arithmetic A: FpArith keeps each
// product reduced to within 0.63 q of zero (mul_reduce) and settles the sum
// every eight digits, so it stays an exact integer below 2^49; IntArith
// keeps canonical residues.
template <class A>
struct DigitSums {
  using V = typename A::Value;
  static constexpr bool fp = std::is_same_v<A, ntt::FpArith>;
  V acc[2][words];

  __device__ DigitSums() {
#pragma unroll
    for (int e = 0; e < words; ++e) acc[0][e] = acc[1][e] = V{0};
  }
  // x: a forward tile output (FpArith: |x| < 12 q; IntArith: [0, 4q)) or a
  // canonical word converted by from_word.
  __device__ void add(const A& a, const DevPrime& p, int e, V x, u64 kb, u64 ka) {
    if constexpr (fp) {
      acc[0][e] = __dadd_rn(acc[0][e], a.mul_reduce(x, a.from_word(kb)));
      acc[1][e] = __dadd_rn(acc[1][e], a.mul_reduce(x, a.from_word(ka)));
    } else {
      const u64 c = a.forward_word(x);
      acc[0][e] = add_mod(acc[0][e], mul_mod(c, kb, p), p.value);
      acc[1][e] = add_mod(acc[1][e], mul_mod(c, ka, p), p.value);
    }
  }
  __device__ void settle(const A& a) {
    if constexpr (fp) {
#pragma unroll
      for (int e = 0; e < words; ++e) {
        a.settle(acc[0][e]);
        a.settle(acc[1][e]);
      }
    }
  }
  __device__ u64 word(const A& a, int component, int e) const {
    if constexpr (fp) {
      return a.canonical(acc[component][e]);
    } else {
      return acc[component][e];
    }
  }
};

// One bulk copy of `bytes` (a multiple of 16, 16-byte aligned) into L2,
// issued by one thread: no registers, no completion to wait for.
__device__ __forceinline__ void prefetch_l2(const void* p, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

template <bool PERMUTE_OWN>
__global__ void __launch_bounds__(DigitTile::threads, blocks_per_sm) digit_tile_inner_product_kernel(NttTables t,
                                                                                                     Args a) {
  using T = DigitTile;
  extern __shared__ TwiddlePair dynamic_smem[];
  const int s = a.slot_begin + static_cast<int>(blockIdx.y);
  const int key_limb = key_limb_of_slot(s, a.level, a.max_level);
  const DevPrime& prime = a.primes[key_limb];
  const std::size_t n = a.n;
  const u32 n1 = a.n >> log_tile;
  const u32 tile_base = blockIdx.x * T::size;
  const u32 run = tile_base + words * threadIdx.x;  // this thread's eight output positions
  ntt::with_arith(t, key_limb, [&](auto ar) {
    using A = decltype(ar);
    using V = typename A::Value;
    const ntt::TileSmem<log_tile, words, A> sm(dynamic_smem);
    const typename A::Twiddle* roots = A::roots(t, key_limb);
    ntt::load_tile_twiddles<log_tile, words>(sm.tw, roots, n1, blockIdx.x);
    DigitSums<A> sums;
    // The loop's addresses are written out on purpose: the same loop with its
    // limbs named through lambdas and one key-load lambda (bit-exact) took
    // 550 us per 2^16 relinearize against 531 (docs/perf/cuda.md, v24).
    for (int j = 0; j < a.digits; ++j) {
      const bool own = own_slot_of_digit(s, j, a.alpha, a.level);
      const u64* kb_limb = a.key + (static_cast<std::size_t>(2 * j) * a.key_limbs + key_limb) * n;
      if (a.prefetch && threadIdx.x < 3 && j + 1 < a.digits) {
        // Thread 0: the next digit's tile (or own words), 1 and 2: its key tiles.
        constexpr u32 tile_bytes = T::size * sizeof(u64);
        const int next = j + 1;
        const bool next_own = own_slot_of_digit(s, next, a.alpha, a.level);
        if (threadIdx.x > 0) {
          prefetch_l2(kb_limb + static_cast<std::size_t>(1 + threadIdx.x) * a.key_limbs * n + tile_base, tile_bytes);
        } else if (!next_own) {
          prefetch_l2(a.extended + (static_cast<std::size_t>(next) * a.slots + s) * n + tile_base, tile_bytes);
        } else if (!PERMUTE_OWN) {
          prefetch_l2(a.d + static_cast<std::size_t>(s) * n + tile_base, tile_bytes);
        }
      }
      u64 kb[words];
      u64 ka[words];
      if (own) {
        load_run(kb_limb + run, kb);
        load_run(kb_limb + static_cast<std::size_t>(a.key_limbs) * n + run, ka);
        const u64* src = a.d + static_cast<std::size_t>(s) * n;
        u64 x[words];
        if constexpr (PERMUTE_OWN) {
#pragma unroll
          for (int e = 0; e < words; ++e) x[e] = src[automorphism_index(run + e, a.galois_element, a.log_n)];
        } else {
          load_run(src + run, x);
        }
#pragma unroll
        for (int e = 0; e < words; ++e) sums.add(ar, prime, e, ar.from_word(x[e]), kb[e], ka[e]);
      } else {
        const u64* inter = a.extended + (static_cast<std::size_t>(j) * a.slots + s) * n + tile_base;
        V x[words];
#pragma unroll
        for (int r = 0; r < words; ++r) x[r] = ar.from_word(inter[threadIdx.x + static_cast<u32>(r * T::threads)]);
        // The key's words are loaded now and used after the passes.
        load_run(kb_limb + run, kb);
        load_run(kb_limb + static_cast<std::size_t>(a.key_limbs) * n + run, ka);
        ntt::first_forward_pass<log_tile, words>(x, roots, n1, blockIdx.x, ar);
        __syncthreads();  // the previous digit's last pass has read the tile
#pragma unroll
        for (int r = 0; r < words; ++r) sm.data[ntt::tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))] = x[r];
        ntt::tile_passes<true, log_tile, words, T::first_forward_log>(
            sm.data, sm.tw, ar, [&](u32 i, V v) {
              const int e = static_cast<int>(i & (words - 1));  // i = run - tile_base + e
              sums.add(ar, prime, e, v, kb[e], ka[e]);
            });
      }
      if ((j & 7) == 7) sums.settle(ar);
    }
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      u64* out = a.accumulators + (static_cast<std::size_t>(c) * a.slots + s) * n + run;
#pragma unroll
      for (int e = 0; e < words; e += 2) {
        store_pair(out + e, make_ulonglong2(sums.word(ar, c, e), sums.word(ar, c, e + 1)));
      }
    }
  });
}

}  // namespace fhelium::cuda::kernels::digit_tiles
