// Hybrid key switching: ModUp (INTT, basis conversion of every digit, NTT of
// the converted limbs), the inner product with the key, ModDown (INTT of the
// P part, conversion P -> Q_l, NTT with the subtraction, P^-1 and the added
// polynomial fused into its store).
//
// Layouts (internal; only the final results must match the CPU backend):
//   extended:     digits x slots x n, slot s = Q prime s (s <= l) or P prime
//                 s - l - 1; a digit's own slots are not stored (read from d).
//   accumulators: 2 x slots x n.
//   converted:    2 x (l + 1) x n.
#include <cooperative_groups.h>

#include <algorithm>
#include <string>

#include "automorphism.cuh"
#include "basis_convert.cuh"
#include "digit_tile_inner_product.cuh"
#include "kernels.hpp"
#include "ntt.cuh"
#include "tile_inner_product_args.hpp"
#include "word_pairs.cuh"

namespace fhelium::cuda::kernels {
namespace {

constexpr int threads = 256;

// ---- ModUp ----

// The input limbs read through X -> X^g (NTT order): a rotation's ModUp
// needs no separate permutation pass.
struct PermutedBatch {
  const u64* in;
  u64* out;
  u32 n;
  u32 galois_element;
  int log_n;
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return b; }
  __device__ u64 load(int b, u32 pos) const {
    return in[static_cast<std::size_t>(b) * n + automorphism_index(pos, galois_element, log_n)];
  }
  __device__ u64* inter(int b) const { return out + static_cast<std::size_t>(b) * n; }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const { out[static_cast<std::size_t>(b) * n + pos] = v; }
};

// x y mod p for canonical x, y: in double precision below fp_limit (as the
// NTT's FpArith: about 14 FP64 instructions), else with 128-bit Barrett
// (about 35 integer ones): a1 b1 is computed inside a latency-bound
// transform kernel, where that difference shows.
__device__ __forceinline__ u64 product_mod(u64 x, u64 y, const DevPrime& p, u64 fp_limit) {
  if (p.value >= fp_limit) return mul_mod(x, y, p);
  const ntt::FpArith f(p);
  return f.canonical(f.mul_reduce(f.from_word(x), f.from_word(y)));
}

// ModUp's input a1 b1 of a multiply + relinearize, computed as it is loaded
// and stored to `product` (work.product: every word is loaded exactly once)
// for the inner product.
struct TensorBatch {
  const u64* a1;
  const u64* b1;
  u64* product;
  u64* out;
  const DevPrime* primes;
  u64 fp_limit;
  u32 n;
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return b; }
  __device__ u64 load(int b, u32 pos) const {
    const std::size_t i = static_cast<std::size_t>(b) * n + pos;
    const u64 v = product_mod(a1[i], b1[i], primes[b], fp_limit);
    product[i] = v;
    return v;
  }
  __device__ u64* inter(int b) const { return out + static_cast<std::size_t>(b) * n; }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const { out[static_cast<std::size_t>(b) * n + pos] = v; }
};

// Two coefficients per thread, blockDim.x apart (both accesses coalesce).
template <int MAX_FROM>
__global__ void __launch_bounds__(threads)
    mod_up_convert_kernel(KeySwitchView ks, const u64* coefficients, u64* extended, u32 n, int slots,
                          const DevPrime* primes, u64 fp_limit) {
  extern __shared__ u64 staged[];
  const int j = static_cast<int>(blockIdx.y);
  const u32 k = blockIdx.x * 2 * threads + threadIdx.x;
  const ConverterView& v = ks.mod_up[j];
  stage_converter(v, primes, staged, fp_limit);
  __syncthreads();
  const int begin = j * ks.alpha;
  const int own = v.from_count;
  const u64* in0 = coefficients + static_cast<std::size_t>(begin) * n + k;
  const u64* const in[2] = {in0, in0 + threads};
  u64* out = extended + static_cast<std::size_t>(j) * slots * n + k;
  convert_staged<MAX_FROM, 2>(staged, own, v.to_count, in, n, fp_limit, [&](int t, const u64 (&r)[2]) {
    const int slot = t < begin ? t : t + own;
    u64* o = out + static_cast<std::size_t>(slot) * n;
    o[0] = r[0];
    o[threads] = r[1];
  });
}

// Forward NTT of every converted limb, in place; own slots are skipped.
struct ExtendedBatch {
  u64* extended;
  u32 n;
  int slots;
  int level;
  int max_level;
  int alpha;
  __device__ bool skip(int b) const { return own_slot_of_digit(b % slots, b / slots, alpha, level); }
  __device__ int prime(int b) const { return key_limb_of_slot(b % slots, level, max_level); }
  __device__ u64 load(int b, u32 pos) const { return extended[static_cast<std::size_t>(b) * n + pos]; }
  __device__ u64* inter(int b) const { return extended + static_cast<std::size_t>(b) * n; }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const { extended[static_cast<std::size_t>(b) * n + pos] = v; }
};

// A single-prime source lifted to a target prime, as convert_staged with
// |A| = 1: x - a_0 when x > (a_0 - 1) / 2.
struct SinglePrimeLift {
  u64 half;    // (a_0 - 1) / 2
  u64 b;       // target prime
  u64 ratio;   // floor(2^64 / b), at most one short
  u64 lifted;  // [a_0]_b
  __device__ u64 operator()(u64 x) const {
    u64 v = x - __umul64hi(x, ratio) * b;
    v = v >= b ? v - b : v;
    return x > half ? sub_mod(v, lifted, b) : v;
  }
};

__device__ __forceinline__ SinglePrimeLift make_lift(const DevPrime& from, const DevPrime& to, u64 lifted) {
  return {(from.value - 1) / 2, to.value, to.ratio_hi, lifted};
}

// ModUp with one prime per digit (alpha = 1) at degrees with a column pass:
// INTT columns of digit j, the lift to slot s and the NTT columns of slot s
// in one launch. b = j x (slots - 1) + t over the targets t of digit j only
// (slot s = t, or t + 1 from the own slot j on, as the converter numbers
// them).
struct ModUpColumns {
  const u64* coefficients;
  u64* extended;
  const ConverterView* mod_up;
  const DevPrime* primes;
  u32 n;
  int slots;
  int level;
  int max_level;
  __device__ int targets() const { return slots - 1; }
  __device__ int slot(int b) const {
    const int t = b % targets();
    return t < b / targets() ? t : t + 1;
  }
  __device__ bool skip(int) const { return false; }
  __device__ int source_prime(int b) const { return b / targets(); }
  __device__ const u64* source(int b) const { return coefficients + static_cast<std::size_t>(b / targets()) * n; }
  __device__ int prime(int b) const { return key_limb_of_slot(slot(b), level, max_level); }
  __device__ u64* inter(int b) const {
    return extended + (static_cast<std::size_t>(b / targets()) * slots + slot(b)) * n;
  }
  __device__ SinglePrimeLift map(int b) const {
    const int j = b / targets();
    return make_lift(primes[j], primes[prime(b)], mod_up[j].overflow_mod_to[2 * (b % targets()) + 1]);
  }
};

// ---- inner product ----

// Two consecutive coefficients per thread: the key (and unpermuted sources)
// are read with 16-byte loads. PERMUTE_EXTENDED: the extended digits are read
// through X -> X^g (hoisted rotations); PERMUTE_OWN: so are the digits' own
// limbs, read from d (hoisted rotations, and rotations whose ModUp read d
// through the permutation).
template <bool PERMUTE_EXTENDED, bool PERMUTE_OWN>
__global__ void __launch_bounds__(threads)
    inner_product_kernel(const u64* extended, const u64* d, const u64* key, u64* accumulators, u32 n, int log_n,
                         int level, int max_level, int alpha, int digits, int slots, int key_limbs, u32 galois_element,
                         const DevPrime* primes, int slot_begin) {
  const int s = slot_begin + static_cast<int>(blockIdx.y);
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const int key_limb = key_limb_of_slot(s, level, max_level);
  const DevPrime& p = primes[key_limb];
  const std::size_t limb_words = n;
  u32 permuted0 = k;
  u32 permuted1 = k + 1;
  if constexpr (PERMUTE_EXTENDED || PERMUTE_OWN) {
    permuted0 = automorphism_index(k, galois_element, log_n);
    permuted1 = automorphism_index(k + 1, galois_element, log_n);
  }
  U128 b0, b1, a0, a1;
  for (int j = 0; j < digits; ++j) {
    const bool own = own_slot_of_digit(s, j, alpha, level);
    const u64* src = own ? d + static_cast<std::size_t>(s) * limb_words
                         : extended + (static_cast<std::size_t>(j) * slots + s) * limb_words;
    const bool permuted = own ? PERMUTE_OWN : PERMUTE_EXTENDED;
    u64 e0, e1;
    if (permuted) {
      e0 = src[permuted0];
      e1 = src[permuted1];
    } else {
      const ulonglong2 e = load_pair(src + k);
      e0 = e.x;
      e1 = e.y;
    }
    const u64* kb = key + (static_cast<std::size_t>(2 * j) * key_limbs + key_limb) * limb_words + k;
    const ulonglong2 vb = load_pair(kb);
    const ulonglong2 va = load_pair(kb + static_cast<std::size_t>(key_limbs) * limb_words);
    mul_add(b0, e0, vb.x);
    mul_add(b1, e1, vb.y);
    mul_add(a0, e0, va.x);
    mul_add(a1, e1, va.y);
    if ((j & 7) == 7) {  // products < 2^124: eight of them and a residue stay below 2^128
      b0 = U128{reduce128(b0, p), 0};
      b1 = U128{reduce128(b1, p), 0};
      a0 = U128{reduce128(a0, p), 0};
      a1 = U128{reduce128(a1, p), 0};
    }
  }
  store_pair(accumulators + static_cast<std::size_t>(s) * limb_words + k,
             make_ulonglong2(reduce128(b0, p), reduce128(b1, p)));
  store_pair(accumulators + static_cast<std::size_t>(slots + s) * limb_words + k,
             make_ulonglong2(reduce128(a0, p), reduce128(a1, p)));
}

// ---- ModUp's forward tiles and the inner product in one launch ----

// Grid (tiles, slots, digits), one cluster per (tile, slot) over the digits:
// block (tile, s, j) runs the forward tile pass of extended digit j, slot s
// (written by the fused columns; the digit's own slot is read from d, through
// X -> X^g when PERMUTE_OWN), multiplies it by both components of the key's
// digit j and leaves the products, reduced to one word each, in its shared
// memory; after a cluster barrier, block j sums a 1/digits share of the
// tile's outputs over every block's products (distributed shared memory) and
// writes the reduced accumulators. The extended digits in NTT form are never
// written or re-read. Its operands: TileInnerProduct (block (tile, y, j)
// computes slot slot_begin + y).

constexpr int tip_log_tile = 10;
using TipTile = ntt::Tile<tip_log_tile, 8>;
// Dynamic shared memory: the tile pass's twiddles and data, then the
// products reduced to one word each (2 components x TILE x 8 bytes): 25.6 KB
// and at most 64 registers, so eight blocks share an SM instead of six
// (with 16-byte products). At 2^14 the 1152 blocks then take 1.09 waves
// instead of 1.45 (cluster placement admits 124 clusters of 8 at once):
// `ncu` 26.2 -> 24.9 us. (Nine per SM, with the twiddles read from global
// memory instead, measured 27.5 us: the passes wait on the loads.)
constexpr int tip_blocks_per_sm = 8;
constexpr int tip_smem_bytes = TipTile::smem_bytes > 2 * TipTile::size * 8 ? TipTile::smem_bytes : 2 * TipTile::size * 8;

// A product x y (canonical inputs) as one word whose sum over at most eight
// digits is exact: for primes below fp_limit a double within 0.63 p of zero
// (FpArith::mul_reduce; eight of them stay below 2^47), else the canonical
// residue (summed in 128 bits).
struct ReducedProducts {
  const DevPrime& p;
  bool fp;
  ntt::FpArith f;  // used only when fp
  __device__ ReducedProducts(const DevPrime& prime, u64 fp_limit)
      : p(prime), fp(prime.value < fp_limit), f(prime) {}
  __device__ u64 product(u64 x, u64 y) const {
    if (!fp) return mul_mod(x, y, p);
    return static_cast<u64>(__double_as_longlong(f.mul_reduce(f.from_word(x), f.from_word(y))));
  }
  // The canonical residue of the sum of words(k) over k < count.
  template <class Words>
  __device__ u64 sum(Words words, int count) const {
    if (fp) {
      double total = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {  // unrolled: the remote loads are issued together
        if (k >= count) break;
        total = __dadd_rn(total, __longlong_as_double(static_cast<long long>(words(k))));
      }
      return f.canonical(total);
    }
    U128 total;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if (k >= count) break;
      const u64 v = words(k);
      total.lo += v;
      total.hi += total.lo < v ? 1 : 0;
    }
    return reduce128(total, p);
  }
};

template <bool PERMUTE_OWN>
__global__ void __launch_bounds__(TipTile::threads, tip_blocks_per_sm)
    tile_inner_product_kernel(NttTables t, TileInnerProduct a) {
  namespace cg = cooperative_groups;
  using T = TipTile;
  constexpr int W = T::words;
  extern __shared__ TwiddlePair dynamic_smem[];
  u64* products = reinterpret_cast<u64*>(dynamic_smem);  // [2][T::size], after the transform
  const cg::cluster_group cluster = cg::this_cluster();
  const int s = a.slot_begin + static_cast<int>(blockIdx.y);
  const int j = static_cast<int>(blockIdx.z);
  const int digits = static_cast<int>(gridDim.z);
  const int key_limb = key_limb_of_slot(s, a.level, a.max_level);
  const std::size_t n = a.n;
  const u32 tile_base = blockIdx.x * T::size;
  u64 x[W];
  if (s == j) {
    const u64* src = a.d + static_cast<std::size_t>(s) * n;  // alpha = 1: the digit's own slot, in NTT form
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const u32 pos = tile_base + threadIdx.x + static_cast<u32>(r * T::threads);
      x[r] = src[PERMUTE_OWN ? automorphism_index(pos, a.galois_element, a.log_n) : pos];
    }
  } else {
    const u64* inter = a.extended + (static_cast<std::size_t>(j) * a.slots + s) * n + tile_base;
#pragma unroll
    for (int r = 0; r < W; ++r) x[r] = inter[threadIdx.x + static_cast<u32>(r * T::threads)];
    ntt::with_arith(t, key_limb, [&](auto ar) {
      using A = decltype(ar);
      using V = typename A::Value;
      const ntt::TileSmem<tip_log_tile, W, A> sm(dynamic_smem);
      V* data = sm.data;
      ntt::forward_tile(sm, A::roots(t, key_limb), static_cast<u32>(n >> tip_log_tile), blockIdx.x, ar, x,
                        ntt::TileData<V>{data});
      __syncthreads();
#pragma unroll
      for (int r = 0; r < W; ++r) x[r] = ar.forward_word(data[ntt::tile_slot(threadIdx.x + static_cast<u32>(r * T::threads))]);
    });
    __syncthreads();  // the products overwrite the twiddles and the data
  }
  // Times both components of the key's digit j.
  const ReducedProducts reduced(a.primes[key_limb], t.fp_limit);
  const u64* kb = a.key + (static_cast<std::size_t>(2 * j) * a.key_limbs + key_limb) * n + tile_base;
  const u64* ka = kb + static_cast<std::size_t>(a.key_limbs) * n;
#pragma unroll
  for (int r = 0; r < W; ++r) {
    const u32 i = threadIdx.x + static_cast<u32>(r * T::threads);
    products[i] = reduced.product(x[r], kb[i]);
    products[T::size + i] = reduced.product(x[r], ka[i]);
  }
  cluster.sync();
  const int rank = static_cast<int>(cluster.block_rank());
  for (int o = rank * T::threads + static_cast<int>(threadIdx.x); o < 2 * T::size; o += digits * T::threads) {
    const u64 sum = reduced.sum([&](int k) { return cluster.map_shared_rank(products, k)[o]; }, digits);
    const int component = o / T::size;
    const u32 pos = static_cast<u32>(o % T::size);
    a.accumulators[(static_cast<std::size_t>(component) * a.slots + s) * n + tile_base + pos] = sum;
  }
  cluster.sync();  // no block's shared memory goes away while another reads it
}

// ---- ModDown ----

// The P limbs of both accumulators, in place: b = poly x K + k.
struct SpecialBatch {
  u64* accumulators;
  u32 n;
  int slots;
  int level;
  int max_level;
  int specials;
  __device__ std::size_t at(int b) const {
    const int poly = b / specials;
    const int k = b % specials;
    return (static_cast<std::size_t>(poly) * slots + level + 1 + k) * n;
  }
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return max_level + 1 + b % specials; }
  __device__ u64 load(int b, u32 pos) const { return accumulators[at(b) + pos]; }
  __device__ u64* inter(int b) const { return accumulators + at(b); }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const { accumulators[at(b) + pos] = v; }
};

// ModDown with one special prime at degrees with a column pass: INTT
// columns of the P limb of accumulator `poly`, the lift to q_i and the NTT
// columns of limb i in one launch (b = poly x (l + 1) + i).
struct ModDownColumns {
  const u64* accumulators;
  u64* converted;
  const u64* overflow_mod_to;  // of the P -> Q_l converter
  const DevPrime* primes;
  u32 n;
  int slots;
  int limbs;    // l + 1
  int special;  // key limb of P
  __device__ bool skip(int) const { return false; }
  __device__ int source_prime(int) const { return special; }
  __device__ const u64* source(int b) const {
    return accumulators + (static_cast<std::size_t>(b / limbs) * slots + limbs) * n;
  }
  __device__ int prime(int b) const { return b % limbs; }
  __device__ u64* inter(int b) const { return converted + static_cast<std::size_t>(b) * n; }
  __device__ SinglePrimeLift map(int b) const {
    const int i = b % limbs;
    return make_lift(primes[special], primes[i], overflow_mod_to[2 * i + 1]);
  }
};

template <int MAX_FROM>
__global__ void __launch_bounds__(threads)
    mod_down_convert_kernel(ConverterView v, const u64* accumulators, u64* converted, u32 n, int slots, int level,
                            const DevPrime* primes, u64 fp_limit) {
  extern __shared__ u64 staged[];
  stage_converter(v, primes, staged, fp_limit);
  __syncthreads();
  const int poly = static_cast<int>(blockIdx.y);
  const u32 k = blockIdx.x * 2 * threads + threadIdx.x;
  const u64* in0 = accumulators + (static_cast<std::size_t>(poly) * slots + level + 1) * n + k;
  const u64* const in[2] = {in0, in0 + threads};
  u64* out = converted + static_cast<std::size_t>(poly) * (level + 1) * n + k;
  convert_staged<MAX_FROM, 2>(staged, v.from_count, v.to_count, in, n, fp_limit, [&](int t, const u64 (&r)[2]) {
    u64* o = out + static_cast<std::size_t>(t) * n;
    o[0] = r[0];
    o[threads] = r[1];
  });
}

// What ModDown's last step reads and writes, shared by its batches: the
// P part converted to Q (`converted`, poly c's limb i at c x (l + 1) + i),
// the accumulators (slots per poly), and out_c = ... + add_c.
struct ModDownOperands {
  u64* converted;
  const u64* accumulators;
  u64* out0;
  const u64* add0;
  u64* out1;
  const u64* add1;
  u32 n;
  int slots;
  const u64* p_inverse;
  const u64* p_inverse_shoup;
  const DevPrime* primes;
  __device__ u64 accumulator(int c, int i, u32 pos) const {
    return accumulators[(static_cast<std::size_t>(c) * slots + i) * n + pos];
  }
  // x P^-1 modulo q = q_i.
  __device__ u64 times_p_inverse(u64 x, int i, u64 q) const { return mul_shoup(x, p_inverse[i], p_inverse_shoup[i], q); }
  __device__ u64* out(int c) const { return c == 0 ? out0 : out1; }
  __device__ const u64* add(int c) const { return c == 0 ? add0 : add1; }
};

// NTT of the converted limbs (b = poly x (l + 1) + i) with the final step in its store:
// out_poly[i] = (acc_poly[i] - conv) * P^-1 + add_poly[i] (add_poly may be
// out_poly: each word is read before it is written, by the same thread).
struct ModDownBatch : ModDownOperands {
  u32 add0_galois;
  int log_n;
  int limbs;  // l + 1
  ntt::TileRows rows{};
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return b % limbs; }
  __device__ u64 load(int b, u32 pos) const { return converted[static_cast<std::size_t>(b) * n + pos]; }
  __device__ u64* inter(int b) const { return converted + static_cast<std::size_t>(b) * n; }
  struct Aux {
    u64 acc;
    u64 add;
  };
  __device__ Aux fetch(int b, u32 pos) const {
    const int poly = b / limbs;
    const int i = b % limbs;
    const std::size_t at = static_cast<std::size_t>(i) * n;
    Aux a{accumulator(poly, i, pos), 0};
    if (poly == 0) {
      if (add0) a.add = add0[at + (add0_galois == 0 ? pos : automorphism_index(pos, add0_galois, log_n))];
    } else if (add1) {
      a.add = add1[at + pos];
    }
    return a;
  }
  __device__ void store(int b, u32 pos, u64 v, const Aux& a) const {
    const int poly = b / limbs;
    const int i = b % limbs;
    const u64 q = primes[i].value;
    u64 r = times_p_inverse(sub_mod(a.acc, v, q), i, q);
    r = add_mod(r, a.add, q);  // a.add is 0 when there is nothing to add
    out(poly)[static_cast<std::size_t>(i) * n + pos] = r;
  }
};

// ModDown with one special prime in two launches (the one-launch cluster
// transforms at 2^14): the INTT of the P limbs in place, then the NTT of
// limb i lifting the P limb's coefficients to q_i as it loads them. (One
// cluster launch for both, with each limb's cluster redoing the INTT of its
// P limb, measured 27.8 us against 8.2 + 9.6 for these two.)
struct ModDownLiftBatch : ModDownBatch {
  const u64* overflow_mod_to;  // of the P -> Q_l converter
  int special;                 // key limb of P
  __device__ u64 load(int b, u32 pos) const {
    const int poly = b / limbs;
    const int i = b % limbs;
    const u64 x = accumulators[(static_cast<std::size_t>(poly) * slots + limbs) * n + pos];
    return make_lift(primes[special], primes[i], overflow_mod_to[2 * i + 1])(x);
  }
};

// ---- ModDown fused with a rescale by q_l ----
// ModDown gives M_c = (acc_c - NTT(conv_c)) P^-1 + add_c, and the rescale
// (rescale.cu) out_c[i] = (M_c[i] - NTT(s_c)[i]) q_l^-1 with s_c the
// centered lift of INTT_l(M_c[l]) to q_i. The transforms are linear, so
// M_c[i] - NTT(s_c)[i] = acc_c[i] P^-1 + add_c[i] - NTT(conv_c[i] P^-1 +
// s_c[i]) and INTT_l(M_c[l]) = INTT_l(acc_c[l] P^-1 + add_c[l]) - conv_c[l]
// P^-1: an inverse NTT of limb l and one forward NTT of the kept limbs,
// instead of ModDown's NTT of every limb and the rescale's two, with the
// same residues.

// temp_c = INTT_l(acc_c[l] P^-1 + add_c[l]) - conv_c[l] P^-1 + floor(q_l / 2), b = c.
struct RescaleDroppedBatch : ModDownOperands {
  u64* temp;
  int last;  // l
  u64 q_last;
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int) const { return last; }
  __device__ u64 scaled(u64 x) const { return times_p_inverse(x, last, q_last); }
  __device__ u64 load(int b, u32 pos) const {
    return add_mod(scaled(accumulator(b, last, pos)), add(b)[static_cast<std::size_t>(last) * n + pos], q_last);
  }
  __device__ u64* inter(int b) const { return temp + static_cast<std::size_t>(b) * n; }
  struct Aux {
    u64 conv;
  };
  __device__ Aux fetch(int b, u32 pos) const {
    return {converted[(static_cast<std::size_t>(b) * (last + 1) + last) * n + pos]};
  }
  __device__ void store(int b, u32 pos, u64 v, const Aux& a) const {
    temp[static_cast<std::size_t>(b) * n + pos] = add_mod(sub_mod(v, scaled(a.conv), q_last), q_last >> 1, q_last);
  }
};

// The NTT of conv_c[i] P^-1 + s_c[i] over the kept limbs (b = c x l + i, in
// place in `converted`), out_c[i] = (acc_c[i] P^-1 + add_c[i] - v) q_l^-1 in its store.
struct RescaleKeptBatch : ModDownOperands {
  const u64* temp;
  int kept;  // l
  RescaleView rescale;
  ntt::TileRows rows{};
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return b % kept; }
  __device__ std::size_t converted_at(int b) const {
    return (static_cast<std::size_t>(b / kept) * (kept + 1) + b % kept) * n;
  }
  __device__ u64 load(int b, u32 pos) const {
    const int i = b % kept;
    const DevPrime& p = primes[i];
    const u64 s = sub_mod(reduce64(temp[static_cast<std::size_t>(b / kept) * n + pos], p), rescale.half_last[i], p.value);
    const u64 conv = times_p_inverse(converted[converted_at(b) + pos], i, p.value);
    return add_mod(conv, s, p.value);
  }
  __device__ u64* inter(int b) const { return converted + converted_at(b); }
  struct Aux {
    u64 acc;
    u64 add;
  };
  __device__ Aux fetch(int b, u32 pos) const {
    const int c = b / kept;
    const int i = b % kept;
    return {accumulator(c, i, pos), add(c)[static_cast<std::size_t>(i) * n + pos]};
  }
  __device__ void store(int b, u32 pos, u64 v, const Aux& a) const {
    const int i = b % kept;
    const u64 q = primes[i].value;
    const u64 m = add_mod(times_p_inverse(a.acc, i, q), a.add, q);
    out(b / kept)[static_cast<std::size_t>(i) * n + pos] =
        mul_shoup(sub_mod(m, v, q), rescale.last_inverse[i], rescale.last_inverse_shoup[i], q);
  }
};

template <class Kernel>
void dispatch_from(int max_from, const Kernel& kernel) {
  if (max_from <= 2) {
    kernel(std::integral_constant<int, 2>{});
  } else if (max_from <= 4) {
    kernel(std::integral_constant<int, 4>{});
  } else if (max_from <= 8) {
    kernel(std::integral_constant<int, 8>{});
  } else if (max_from <= 16) {
    kernel(std::integral_constant<int, 16>{});
  } else {
    kernel(std::integral_constant<int, 64>{});
  }
}

}  // namespace

namespace {
// Calls f with the batch ModUp's inverse NTT reads into work.coefficients:
// a1 b1 of the tensor, d, or d through X -> X^g.
template <class F>
void with_mod_up_input(const Launch& l, const KeySwitchWork& work, const u64* d, int limbs, u32 galois_element,
                       const Tensor* tensor, F&& f) {
  if (tensor != nullptr) {
    f(TensorBatch{tensor->a1, tensor->b1, work.product, work.coefficients, l.tables.primes, l.tables.fp_limit, l.n});
  } else if (galois_element == 0) {
    f(ntt::PlainBatch{d, work.coefficients, l.n, limbs, 0});
  } else {
    f(PermutedBatch{d, work.coefficients, l.n, galois_element, l.tables.log_n});
  }
}

// Whether ModUp's forward tile pass and the inner product run as one
// cluster kernel: one prime per digit, at most 8 digits, 2^10-word tiles
// after a fused column pass (2^11..2^14).
bool fused_inner_product(const Launch& l, const KeySwitchView& ks) {
  return ks.alpha == 1 && ntt::fuse_columns(l.tables.log_n) &&
         ntt::shape_for(l.tables.log_n).log_tile == tip_log_tile && ks.digits >= 1 && ks.digits <= 8 &&
         ks.digits == ks.level + 1;
}

// ModUp up to the fused inner product: INTT tiles, (INTT columns, lift, NTT columns).
void mod_up_columns(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                    u32 galois_element, const Tensor* tensor) {
  const int limbs = ks.level + 1;
  const int slots = ks.slots();
  with_mod_up_input(l, work, d, limbs, galois_element, tensor,
                    [&](const auto& input) { ntt::inverse_tiles_only(l.tables, input, limbs, l.stream); });
  const ModUpColumns columns{work.coefficients, work.extended, ks.mod_up, l.tables.primes, l.n, slots,
                             ks.level,          l.max_level};
  ntt::inverse_map_forward(l.tables, columns, ks.digits * (slots - 1), slots - 1, l.stream);
}

// ModUp's INTT of d and the conversion of every digit into work.extended
// (coefficient form).
void mod_up_convert(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                    u32 galois_element, const Tensor* tensor) {
  const int limbs = ks.level + 1;
  const int slots = ks.slots();
  with_mod_up_input(l, work, d, limbs, galois_element, tensor,
                    [&](const auto& input) { ntt::inverse(l.tables, input, limbs, l.stream); });
  const dim3 grid(l.n / (2 * threads), static_cast<unsigned>(ks.digits));
  // Every digit has |A| <= alpha sources and at most level + specials targets.
  const int smem = converter_smem_words(ks.alpha, ks.level + ks.specials) * static_cast<int>(sizeof(u64));
  dispatch_from(ks.alpha, [&](auto max_from) {
    constexpr int max = decltype(max_from)::value;
    ntt::allow_dynamic_smem(mod_up_convert_kernel<max>, smem);
    mod_up_convert_kernel<max><<<grid, threads, smem, l.stream>>>(ks, work.coefficients, work.extended, l.n, slots,
                                                                  l.tables.primes, l.tables.fp_limit);
    check_launch("mod_up_convert");
  });
}

ExtendedBatch extended_batch(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work) {
  return ExtendedBatch{work.extended, l.n, ks.slots(), ks.level, l.max_level, ks.alpha};
}

// The whole ModUp: the extended digits in NTT form.
void mod_up_full(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d, u32 galois_element,
                 const Tensor* tensor) {
  const int count = ks.digits * ks.slots();
  if (ks.alpha == 1 && ntt::fuse_columns(l.tables.log_n)) {
    // 3 launches: INTT tiles, (INTT columns, lift, NTT columns), NTT tiles.
    mod_up_columns(l, ks, work, d, galois_element, tensor);
    ntt::forward_tiles_only(l.tables, extended_batch(l, ks, work), count, l.stream);
    return;
  }
  mod_up_convert(l, ks, work, d, galois_element, tensor);
  ntt::forward(l.tables, extended_batch(l, ks, work), count, l.stream);
}

// The operands of a fused tile pass and inner product for slots from `begin`.
TileInnerProduct tile_inner_product_args(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work,
                                         const u64* d, const u64* key, u32 galois_element, int begin) {
  return {work.extended, d, key, work.accumulators, l.tables.primes, l.n, galois_element, l.tables.log_n,
          ks.level, l.max_level, ks.slots(), l.max_level + 1 + ks.specials, begin};
}

// Whether ModUp's forward tile pass and the inner product run as one kernel
// looping over the digits (digit_tile_inner_product.cuh): degrees with a
// separate column pass and 2^11-word tiles (2^16).
bool digit_tile_inner_product(const Launch& l) {
  const ntt::Shape shape = ntt::shape_for(l.tables.log_n);
  return shape.log_tile == digit_tiles::log_tile && shape.n1 > 1 && !ntt::fuse_columns(l.tables.log_n);
}

// ModUp up to the forward tile pass: INTT, conversion, forward columns.
void mod_up_to_tiles(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                     u32 galois_element, const Tensor* tensor) {
  mod_up_convert(l, ks, work, d, galois_element, tensor);
  ntt::launch_columns_any(true, ntt::shape_for(l.tables.log_n).n1, l.tables, extended_batch(l, ks, work),
                          ks.digits * ks.slots(), l.stream);
}

// The forward tile pass of every digit and the inner product for slots
// [begin, begin + count), after mod_up_to_tiles.
void digit_tiles_inner_product(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                               const u64* key, u32 galois_element, int begin, int count) {
  if (count <= 0) return;
  const digit_tiles::Args args{tile_inner_product_args(l, ks, work, d, key, galois_element, begin), ks.alpha,
                               ks.digits, /*prefetch=*/true};
  using T = digit_tiles::DigitTile;
  const dim3 grid(l.n >> digit_tiles::log_tile, static_cast<unsigned>(count));
  auto launch = [&](auto kernel) {
    ntt::allow_dynamic_smem(kernel, T::smem_bytes);
    kernel<<<grid, T::threads, T::smem_bytes, l.stream>>>(l.tables, args);
    check_launch("digit_tile_inner_product");
  };
  if (galois_element == 0) {
    launch(digit_tiles::digit_tile_inner_product_kernel<false>);
  } else {
    launch(digit_tiles::digit_tile_inner_product_kernel<true>);
  }
}

// The fused forward tile pass and inner product (after mod_up_columns) for
// slots [begin, begin + count).
void tile_inner_product(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                        const u64* key, u32 galois_element, int begin, int count) {
  const TileInnerProduct args = tile_inner_product_args(l, ks, work, d, key, galois_element, begin);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(l.n >> tip_log_tile, static_cast<unsigned>(count), static_cast<unsigned>(ks.digits));
  config.blockDim = dim3(TipTile::threads);
  config.dynamicSmemBytes = tip_smem_bytes;
  config.stream = l.stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = 1;
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = static_cast<unsigned>(ks.digits);
  config.attrs = attribute;
  config.numAttrs = 1;
  static_assert(tip_smem_bytes <= 48 * 1024);
  if (galois_element == 0) {
    check(cudaLaunchKernelEx(&config, tile_inner_product_kernel<false>, l.tables, args), "cudaLaunchKernelEx");
  } else {
    check(cudaLaunchKernelEx(&config, tile_inner_product_kernel<true>, l.tables, args), "cudaLaunchKernelEx");
  }
  check_launch("tile_inner_product");
}

// work.accumulators (slots [begin, begin + count)) = sum over digits of
// extended_j times the key's digit j; the digits' own limbs are read from d.
// The extended digits are read through X -> X^extended_galois and d through
// X -> X^own_galois, unless the element is 0 (both nonzero: the same one).
void inner_product(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d, const u64* key,
                   u32 extended_galois, u32 own_galois, int begin, int count) {
  const int slots = ks.slots();
  const int key_limbs = l.max_level + 1 + ks.specials;
  const dim3 grid(l.n / (2 * threads), static_cast<unsigned>(count));
  if (extended_galois != 0 && own_galois != 0 && extended_galois != own_galois) {
    throw_cuda_error(cudaErrorInvalidValue, "inner product with two different Galois elements");
  }
  const u32 g = extended_galois != 0 ? extended_galois : own_galois;
  auto launch = [&](auto kernel) {
    kernel<<<grid, threads, 0, l.stream>>>(work.extended, d, key, work.accumulators, l.n, l.tables.log_n, ks.level,
                                           l.max_level, ks.alpha, ks.digits, slots, key_limbs, g, l.tables.primes,
                                           begin);
    check_launch("inner_product");
  };
  if (extended_galois == 0 && own_galois == 0) {
    launch(inner_product_kernel<false, false>);
  } else if (extended_galois == 0) {
    launch(inner_product_kernel<false, true>);
  } else if (own_galois == 0) {
    launch(inner_product_kernel<true, false>);
  } else {
    launch(inner_product_kernel<true, true>);
  }
}

// How ModDown runs: with one special prime in two launches (the one-launch
// cluster transforms, 2^14) or three (a fused column pass, 2^11..2^13);
// otherwise INTT, conversion P -> Q_l and NTT.
enum class ModDownPath { cluster, fused_columns, general };

ModDownPath mod_down_path(const Launch& l, const KeySwitchView& ks) {
  if (ks.specials == 1 && ntt::cluster_ntt(l.tables.log_n)) return ModDownPath::cluster;
  if (ks.specials == 1 && ntt::fuse_columns(l.tables.log_n)) return ModDownPath::fused_columns;
  return ModDownPath::general;
}

// ModDown's kernels that read only the accumulators' P slots: their INTT (in
// place), and where a separate kernel lifts them to Q_l, that kernel (into
// work.converted).
void mod_down_special(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work) {
  const int slots = ks.slots();
  const int limbs = ks.level + 1;
  const SpecialBatch special{work.accumulators, l.n, slots, ks.level, l.max_level, ks.specials};
  const ModDownPath path = mod_down_path(l, ks);
  if (path == ModDownPath::cluster) {
    ntt::inverse(l.tables, special, 2, l.stream);
  } else if (path == ModDownPath::fused_columns) {
    // INTT tiles of P, then (INTT columns, lift, NTT columns).
    ntt::inverse_tiles_only(l.tables, special, 2, l.stream);
    const ModDownColumns columns{
        work.accumulators, work.converted, ks.mod_down.overflow_mod_to, l.tables.primes, l.n, slots, limbs,
        l.max_level + 1};
    ntt::inverse_map_forward(l.tables, columns, 2 * limbs, limbs, l.stream);
  } else {
    ntt::inverse(l.tables, special, 2 * ks.specials, l.stream);
    const dim3 grid(l.n / (2 * threads), 2);
    const int smem = converter_smem_words(ks.specials, limbs) * static_cast<int>(sizeof(u64));
    dispatch_from(ks.specials, [&](auto max_from) {
      constexpr int max = decltype(max_from)::value;
      ntt::allow_dynamic_smem(mod_down_convert_kernel<max>, smem);
      mod_down_convert_kernel<max><<<grid, threads, smem, l.stream>>>(
          ks.mod_down, work.accumulators, work.converted, l.n, slots, ks.level, l.tables.primes, l.tables.fp_limit);
      check_launch("mod_down_convert");
    });
  }
}

ModDownOperands mod_down_operands(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work,
                                  const KeySwitchOutput& o) {
  return {work.converted, work.accumulators, o.out0,         o.add0,           o.out1,
          o.add1,         l.n,               ks.slots(),     ks.p_inverse,     ks.p_inverse_shoup,
          l.tables.primes};
}

// The batch of ModDown's final NTT: the lifted P part, with
// out_c = (acc_c - conv_c) P^-1 + add_c in its store.
ModDownBatch mod_down_batch(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work,
                            const KeySwitchOutput& o) {
  return {mod_down_operands(l, ks, work, o), o.add0_galois, l.tables.log_n, ks.level + 1,
          ntt::TileRows{tile_rows_by_prime(2, ks.level + 1)}};
}

// ModDown with the rescale after mod_down_special (general path): the
// inverse NTT of limb l, then the forward NTT of the kept limbs.
void mod_down_rescale(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const KeySwitchOutput& o,
                      const RescaleAfter& r) {
  const int kept = ks.level;
  const ModDownOperands operands = mod_down_operands(l, ks, work, o);
  const RescaleDroppedBatch dropped{operands, r.temp, kept, r.tables.q_last};
  ntt::inverse(l.tables, dropped, 2, l.stream);
  const RescaleKeptBatch batch{operands, r.temp, kept, r.tables, ntt::TileRows{tile_rows_by_prime(2, kept)}};
  ntt::forward(l.tables, batch, 2 * kept, l.stream);
}

// Whether ModDown's final NTT starts early: its column pass reads only the
// converted P part, so it runs right after mod_down_special (on the side
// stream, beside the Q slots' inner product), and only its tile pass, which
// reads the accumulators, waits for the inner product.
bool early_mod_down_columns(const Launch& l, const KeySwitchView& ks) {
  return mod_down_path(l, ks) == ModDownPath::general && ntt::forward_in_two_passes(l.tables.log_n, 2 * (ks.level + 1));
}

// ModDown's final NTT, after mod_down_special: the NTT of the lifted P part
// with out_c = (acc_c - conv_c) P^-1 + add_c in its store. `columns_done`:
// its column pass ran early (early_mod_down_columns).
void mod_down_finish(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const KeySwitchOutput& o,
                     bool columns_done) {
  const int limbs = ks.level + 1;
  const ModDownBatch batch = mod_down_batch(l, ks, work, o);
  const ModDownPath path = mod_down_path(l, ks);
  if (columns_done) {
    ntt::forward_tiles_only(l.tables, batch, 2 * limbs, l.stream);
  } else if (path == ModDownPath::cluster) {
    const ModDownLiftBatch lift{batch, ks.mod_down.overflow_mod_to, l.max_level + 1};
    ntt::forward(l.tables, lift, 2 * limbs, l.stream);
  } else if (path == ModDownPath::fused_columns) {
    ntt::forward_tiles_only(l.tables, batch, 2 * limbs, l.stream);
  } else {
    ntt::forward(l.tables, batch, 2 * limbs, l.stream);
  }
}

// The inner product (inner_product(l, begin, count) fills the accumulators'
// slots [begin, begin + count)) and ModDown. Split: the P slots' inner
// product and mod_down_special on side->stream, the Q slots' inner product
// on the main stream; the two share no output, and ModDown's final NTT
// waits for both. Without a side stream all runs on l.stream. The P part
// is a chain of small latency-bound launches (at 2^14 the INTT of the
// 60-bit P limbs alone is about 8 us) that the Q slots' inner product hides.
template <class InnerProduct>
void inner_product_mod_down(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work,
                            const KeySwitchOutput& out, const SideStream* side, InnerProduct&& inner_product,
                            const RescaleAfter* rescale = nullptr) {
  const int q_slots = ks.level + 1;
  const bool early_columns = rescale == nullptr && early_mod_down_columns(l, ks);
  auto special_part = [&](const Launch& at) {
    mod_down_special(at, ks, work);
    if (early_columns) ntt::forward_columns_only(at.tables, mod_down_batch(at, ks, work, out), 2 * q_slots, at.stream);
  };
  if (side != nullptr) {
    const Launch beside = l.on(side->stream);
    side->fork(l.stream);
    inner_product(beside, q_slots, ks.specials);
    special_part(beside);
    inner_product(l, 0, q_slots);
    side->join(l.stream);
  } else {
    inner_product(l, 0, q_slots + ks.specials);
    special_part(l);
  }
  if (rescale != nullptr) {
    mod_down_rescale(l, ks, work, out, *rescale);
  } else {
    mod_down_finish(l, ks, work, out, early_columns);
  }
}
}  // namespace

bool fuses_rescale(const Launch& l, const KeySwitchView& ks) {
  return ks.level >= 1 && mod_down_path(l, ks) == ModDownPath::general;
}

void key_switch(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d, u32 galois_element,
                const u64* key, const KeySwitchOutput& out, const SideStream& side, const Tensor* tensor,
                const RescaleAfter* rescale) {
  if (rescale != nullptr && (!fuses_rescale(l, ks) || out.add0 == nullptr || out.add1 == nullptr ||
                             out.add0_galois != 0 || out.add0 == out.out0 || out.add1 == out.out1)) {
    throw_cuda_error(cudaErrorInvalidValue, "key switch with a fused rescale at level " + std::to_string(ks.level) +
                                                ": expected ModDown's general path, both addends, no permutation "
                                                "and no aliasing");
  }
  // The inner product reads the digits' own limbs from d: a1 b1 as ModUp stored it.
  const u64* own = tensor != nullptr ? work.product : d;
  if (fused_inner_product(l, ks)) {
    mod_up_columns(l, ks, work, d, galois_element, tensor);
    inner_product_mod_down(
        l, ks, work, out, &side,
        [&](const Launch& at, int begin, int count) {
          tile_inner_product(at, ks, work, own, key, galois_element, begin, count);
        },
        rescale);
    return;
  }
  if (digit_tile_inner_product(l)) {
    mod_up_to_tiles(l, ks, work, d, galois_element, tensor);
    inner_product_mod_down(
        l, ks, work, out, &side,
        [&](const Launch& at, int begin, int count) {
          digit_tiles_inner_product(at, ks, work, own, key, galois_element, begin, count);
        },
        rescale);
    return;
  }
  mod_up_full(l, ks, work, d, galois_element, tensor);
  inner_product_mod_down(
      l, ks, work, out, &side,
      [&](const Launch& at, int begin, int count) {
        inner_product(at, ks, work, own, key, 0, galois_element, begin, count);
      },
      rescale);
}

void mod_up(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d) {
  mod_up_full(l, ks, work, d, 0, nullptr);
}

void rotate_extended(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                     u32 galois_element, const u64* key, const KeySwitchOutput& out, const SideStream* side) {
  inner_product_mod_down(l, ks, work, out, side, [&](const Launch& at, int begin, int count) {
    inner_product(at, ks, work, d, key, galois_element, galois_element, begin, count);
  });
}

}  // namespace fhelium::cuda::kernels
