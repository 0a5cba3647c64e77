// Host-side entry points of the 32-bit word family's kernels. Each function
// enqueues work on `stream`, checks every launch, and never synchronises or
// allocates. A polynomial's limb i uses primes[i]: callers pass the prime
// table from the limb's key limb on (a level's window of Q primes).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "narrow_types.hpp"
#include "term_chunks.hpp"

namespace fhelium::cuda::narrow {

// components x limbs x n residues, limb-major.
struct Poly {
  u32* data = nullptr;
  int components = 0;
  int limbs = 0;
};

// ---- element-wise (narrow_elementwise.cu) ----
// Components of a beyond b's are copied.
void add(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b);
void sub(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b);
void negate(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a);
// The constant's residue of limb i is residues.w[i]; only component 0 changes.
void add_constant(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, const LimbConstants& residues,
                  bool ntt_domain);
void multiply_constant(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a,
                       const LimbConstants& constants);
// p has one component.
void multiply_plain(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly p);
// out = a_0 p_0 + a_1 p_1 + ..., or a_0 + a_1 + ... when p is empty
// (Backend::sum_products); out is none of the operands.
using SumTerms = cuda::SumTerms<u32, 16>;
// out = a_0 r_0 + a_1 r_1 + ..., r holding out.limbs residues per term
// (Backend::sum_constant_products); out is none of the operands.
using ConstantTerms = cuda::ConstantTerms<u32, 12, 64>;
// Backend::sum_product_groups for two-component outputs whose groups have
// at most one term per ciphertext (one_term_per_input).
void sum_product_groups(cudaStream_t stream, u32 n, const Prime* primes, std::span<const Poly> outs,
                        std::span<const Poly> a, std::span<const Poly> p, std::span<const std::size_t> ends);
void sum_constant_products(cudaStream_t stream, u32 n, const Prime* primes, Poly out, std::span<const Poly> a,
                           std::span<const std::uint64_t> r);
void sum_products(cudaStream_t stream, u32 n, const Prime* primes, Poly out, std::span<const Poly> a,
                  std::span<const Poly> p);
// (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0, a1 b1).
void multiply(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b);
// out's limb i of every component is a's limb i + offset.
void copy_limbs(cudaStream_t stream, u32 n, Poly out, Poly a, int offset);

// ---- key switching and rescale (narrow_keyswitch.cu) ----
// out(X) = in(X^g) on `limbs` limbs in the coefficient domain.
void galois_coefficients(cudaStream_t stream, u32 n, const Prime* primes, const u32* in, u32* out, int limbs,
                         u32 galois_element);
// Basis conversion of `components` inputs (in + z in_stride, the converter's
// from_count limbs each) to out + z out_stride (to_count limbs each); with
// `accumulate`, added to what out holds.
void convert(cudaStream_t stream, u32 n, const ConverterView& converter, const u32* in, std::size_t in_stride, u32* out,
             std::size_t out_stride, int components, bool accumulate = false);

// acc_c limb i = acc_c limb i x w_i + add_c limb i (mod primes[i]) for
// limbs first <= i < first + limbs of components c = 0, 1 (strides in
// words): a key switch's accumulators on the limbs a rescale drops, before
// ModDown takes the rescale.
struct DroppedFold {
  u32* acc;
  std::size_t acc_stride;
  const u32* add;
  std::size_t add_stride;
  const Prime* primes;
  int first;
  int limbs;
  LimbConstants w;
};
void fold_dropped(cudaStream_t stream, u32 n, const DroppedFold& args);

// The most digits one launch converts (their converters travel by value).
constexpr int max_digits_per_launch = 16;

// ModUp's conversions of several digits in one launch: digit j's limbs
// [begin_j, begin_j + from_count) of `in` to the first to_count limbs of
// out + j slots n (its targets).
struct DigitConversion {
  ConverterView converters[max_digits_per_launch];
  int begin[max_digits_per_launch];
  int digits;
  int slots;  // limbs per digit of out
  const u32* in;
  u32* out;
};
void convert_digits(cudaStream_t stream, u32 n, const DigitConversion& args);

// Every digit's own limbs [begin_j, end_j) of d (NTT domain), read through
// X -> X^g when galois_element is not 0, to the last end_j - begin_j limbs of
// digit j of `extended` (slots limbs each).
struct OwnLimbs {
  const u32* d;
  u32* extended;
  int digits;
  int slots;
  int max_own;  // the most limbs a digit owns
  int begin[max_limbs];
  int end[max_limbs];
  u32 galois_element;
};
void own_limbs(cudaStream_t stream, u32 n, const OwnLimbs& args);

// The key switch's inner product at one level.
struct InnerProduct {
  const u32* extended;     // digits x slots x n: digit j's converted limbs, then its own ones
  const u32* key;          // key digits x 2 x key_limbs x n
  const int* slot_primes;  // the key limb of each slot (the level's Q limbs, then P)
  const Prime* primes;     // by key limb
  u32* accumulators;       // 2 x slots x n
  int digits;
  int first_digit;  // the key's digit of the level's digit 0
  int slots;
  int key_limbs;
  int digit_begin[max_limbs];  // the level's limbs [begin, end) form digit j
  int digit_end[max_limbs];
  u32 galois_element;  // the extended limbs read through X -> X^g when not 0
};
void inner_product(cudaStream_t stream, u32 n, const InnerProduct& args);

// ModRaise of a level 0 of several primes: each coefficient's integer in
// (-Q_0 / 2, Q_0 / 2] by Garner's algorithm (Q_0 < 2^63), then its residue
// modulo every prime of `out` (primes[i] for limb i), as Backend::mod_raise.
constexpr int max_level_zero_primes = 4;
struct LevelZero {
  int count;
  u32 q[max_level_zero_primes];
  u32 garner[max_level_zero_primes];  // (q_0 .. q_(j-1))^-1 mod q_j
  std::uint64_t modulus;              // Q_0; 0 when it is 2^63 or more (mod_raise refuses)
};
void mod_raise(cudaStream_t stream, u32 n, const Prime* primes, const LevelZero& zero, Poly out, Poly a);

}  // namespace fhelium::cuda::narrow
