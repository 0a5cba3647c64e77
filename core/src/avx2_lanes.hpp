// AVX2 lane arithmetic on 64-bit residues: four lanes per instruction,
// 64-bit products assembled from 32-bit multiplies (AVX2 has no 64-bit high
// multiply). Shared by the NTT and the limb kernels; every function is
// compiled for AVX2 only, so callers dispatch on detail::cpu_has_avx2().
#pragma once

#include <immintrin.h>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail::avx2 {

#define FHELIUM_AVX2 __attribute__((target("avx2"), always_inline)) inline

// A constant split into its 32-bit halves once.
struct Constant {
  __m256i lo;  // the value (low 32 bits are what mul_epu32 reads)
  __m256i hi;  // the value >> 32
};

FHELIUM_AVX2 Constant broadcast(u64 value) {
  return {_mm256_set1_epi64x(static_cast<long long>(value)), _mm256_set1_epi64x(static_cast<long long>(value >> 32))};
}

// High 64 bits of x * c, exact.
FHELIUM_AVX2 __m256i mulhi(__m256i x, const Constant& c) {
  const __m256i x_hi = _mm256_srli_epi64(x, 32);
  const __m256i ll = _mm256_mul_epu32(x, c.lo);
  const __m256i lh = _mm256_mul_epu32(x, c.hi);
  const __m256i hl = _mm256_mul_epu32(x_hi, c.lo);
  const __m256i hh = _mm256_mul_epu32(x_hi, c.hi);
  const __m256i mask = _mm256_set1_epi64x(0xffffffffLL);
  const __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, mask)),
                                       _mm256_and_si256(hl, mask));
  return _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                          _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
}

// The 128-bit product of two lanes, as (high, low) 64-bit halves.
FHELIUM_AVX2 void multiply_wide(__m256i a, __m256i b, __m256i& high, __m256i& low) {
  const __m256i a_hi = _mm256_srli_epi64(a, 32);
  const __m256i b_hi = _mm256_srli_epi64(b, 32);
  const __m256i ll = _mm256_mul_epu32(a, b);
  const __m256i lh = _mm256_mul_epu32(a, b_hi);
  const __m256i hl = _mm256_mul_epu32(a_hi, b);
  const __m256i hh = _mm256_mul_epu32(a_hi, b_hi);
  const __m256i mask = _mm256_set1_epi64x(0xffffffffLL);
  const __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, mask)),
                                       _mm256_and_si256(hl, mask));
  low = _mm256_or_si256(_mm256_and_si256(ll, mask), _mm256_slli_epi64(mid, 32));
  high = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                          _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
}

// High 64 bits of x * c, or up to 2 below: the low x c product and the
// carries of the middle terms are skipped (one 32-bit multiply and five
// other instructions less per call).
FHELIUM_AVX2 __m256i mulhi_approx(__m256i x, const Constant& c) {
  const __m256i x_hi = _mm256_srli_epi64(x, 32);
  const __m256i lh = _mm256_mul_epu32(x, c.hi);
  const __m256i hl = _mm256_mul_epu32(x_hi, c.lo);
  const __m256i hh = _mm256_mul_epu32(x_hi, c.hi);
  return _mm256_add_epi64(hh, _mm256_add_epi64(_mm256_srli_epi64(lh, 32), _mm256_srli_epi64(hl, 32)));
}

// Low 64 bits of x * c.
FHELIUM_AVX2 __m256i mullo(__m256i x, const Constant& c) {
  const __m256i x_hi = _mm256_srli_epi64(x, 32);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(x_hi, c.lo), _mm256_mul_epu32(x, c.hi));
  return _mm256_add_epi64(_mm256_mul_epu32(x, c.lo), _mm256_slli_epi64(cross, 32));
}

// x - bound where x >= bound (values below 2^63, so signed compares are exact).
FHELIUM_AVX2 __m256i subtract_if_at_least(__m256i x, __m256i bound, __m256i bound_minus_one) {
  return _mm256_sub_epi64(x, _mm256_and_si256(_mm256_cmpgt_epi64(x, bound_minus_one), bound));
}

// Loop-invariant lane constants for one prime.
struct Lanes {
  Constant q;
  __m256i q_v, q_minus_one, two_q, two_q_minus_one;
};

FHELIUM_AVX2 Lanes lanes_for(u64 q) {
  return {broadcast(q), _mm256_set1_epi64x(static_cast<long long>(q)), _mm256_set1_epi64x(static_cast<long long>(q - 1)),
          _mm256_set1_epi64x(static_cast<long long>(2 * q)), _mm256_set1_epi64x(static_cast<long long>(2 * q - 1))};
}

// x * w mod q in [0, 2q) (Shoup), lane-wise. The quotient estimate is at
// most 3 short, so x w - quotient q < 4q < 2^63 and one conditional
// subtraction of 2q gives Shoup's range.
FHELIUM_AVX2 __m256i mul_shoup_lazy(__m256i x, const Constant& w, const Constant& w_shoup, const Lanes& l) {
  const __m256i quotient = mulhi_approx(x, w_shoup);
  const __m256i r = _mm256_sub_epi64(mullo(x, w), mullo(quotient, l.q));
  return subtract_if_at_least(r, l.two_q, l.two_q_minus_one);
}

FHELIUM_AVX2 __m256i load(const u64* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
FHELIUM_AVX2 void store(u64* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// 4x4 transpose of 64-bit elements: row k of the result holds element k of
// each input vector. It is its own inverse.
FHELIUM_AVX2 void transpose(__m256i& v0, __m256i& v1, __m256i& v2, __m256i& v3) {
  const __m256i t0 = _mm256_unpacklo_epi64(v0, v1);
  const __m256i t1 = _mm256_unpackhi_epi64(v0, v1);
  const __m256i t2 = _mm256_unpacklo_epi64(v2, v3);
  const __m256i t3 = _mm256_unpackhi_epi64(v2, v3);
  v0 = _mm256_permute2x128_si256(t0, t2, 0x20);
  v1 = _mm256_permute2x128_si256(t1, t3, 0x20);
  v2 = _mm256_permute2x128_si256(t0, t2, 0x31);
  v3 = _mm256_permute2x128_si256(t1, t3, 0x31);
}

// The even- and odd-indexed entries of p[0..7].
FHELIUM_AVX2 void deinterleave(const u64* p, __m256i& even, __m256i& odd) {
  const __m256i a = load(p);
  const __m256i b = load(p + 4);
  even = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xD8);
  odd = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), 0xD8);
}

}  // namespace fhelium::detail::avx2
