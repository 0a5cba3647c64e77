// AVX2 lane arithmetic for residues below 2^31 held in the low halves of
// 64-bit lanes (the 32-bit word family): every product is one vpmuludq.
// Shared by the narrow basis conversion and the 32-bit limb kernels; every
// function is compiled for AVX2 only, so callers dispatch on
// detail::cpu_has_avx2().
#pragma once

#include "avx2_lanes.hpp"

namespace fhelium::detail::narrow {

using avx2::subtract_if_at_least;  // r - q where r >= q, for lanes below 2^63

FHELIUM_AVX2 __m256i splat(u64 x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }

// Shoup's lazy x w mod q in [0, 2q) for x < 2^32: exact in 64-bit lanes.
FHELIUM_AVX2 __m256i mul_shoup_lazy_lanes(__m256i x, __m256i w, __m256i w_shoup, __m256i q) {
  const __m256i quotient = _mm256_srli_epi64(_mm256_mul_epu32(x, w_shoup), 32);
  return _mm256_sub_epi64(_mm256_mul_epu32(x, w), _mm256_mul_epu32(quotient, q));
}

struct NarrowLanes {
  __m256i q, q_minus_one, two_q, two_q_minus_one, two32, two32_shoup, one, one_shoup;
};

FHELIUM_AVX2 NarrowLanes lanes_for(const NarrowModulus& m) {
  const u64 q = m.value;
  return {splat(q), splat(q - 1), splat(2 * q), splat(2 * q - 1), splat(m.two32), splat(m.two32_shoup), splat(1),
          splat(m.one_shoup)};
}

// reduce_narrow on four lanes: x = h 2^32 + l -> [h 2^32]_q + [l]_q.
FHELIUM_AVX2 __m256i reduce_lanes(__m256i x, const NarrowLanes& l) {
  const __m256i high = mul_shoup_lazy_lanes(_mm256_srli_epi64(x, 32), l.two32, l.two32_shoup, l.q);
  const __m256i low = mul_shoup_lazy_lanes(_mm256_and_si256(x, _mm256_set1_epi64x(0xffffffffLL)), l.one, l.one_shoup,
                                           l.q);
  const __m256i t = subtract_if_at_least(_mm256_add_epi64(high, low), l.two_q, l.two_q_minus_one);
  return subtract_if_at_least(t, l.q, l.q_minus_one);
}

}  // namespace fhelium::detail::narrow
