// The narrow basis conversion on four 64-bit lanes: residues below 2^31 sit
// in the low halves, so every product is one vpmuludq.
#include <algorithm>

#include "narrow_lanes.hpp"
#include "rns_narrow.hpp"

namespace fhelium::detail {
namespace {

using namespace narrow;

// The exact double of lanes below 2^52.
FHELIUM_AVX2 __m256d to_double(__m256i x) {
  const __m256i magic_bits = _mm256_set1_epi64x(0x4330000000000000LL);  // 2^52
  return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, magic_bits)), _mm256_set1_pd(0x1p52));
}

// Four residues into 64-bit lanes, and back.
template <class W>
FHELIUM_AVX2 __m256i load4(const W* p) {
  if constexpr (sizeof(W) == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  } else {
    return _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

template <class W>
FHELIUM_AVX2 void store4(W* p, __m256i x) {
  if constexpr (sizeof(W) == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x);
  } else {
    const __m256i low_halves = _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(low_halves));
  }
}

template <class W>
__attribute__((target("avx2"))) void convert_blocks(const NarrowConversion& c, const W* in, W* out, std::size_t n,
                                                    std::size_t begin, std::size_t end, std::size_t first_target,
                                                    std::size_t end_target) {
  const std::size_t na = c.from_count;
  const std::size_t vector_end = begin + (end - begin) / 4 * 4;
  alignas(32) u64 y[narrow_max_from_primes][narrow_block];
  alignas(32) u64 v[narrow_block];
  alignas(32) double overflow[narrow_block];
  __m256i hat[narrow_max_from_primes];
  for (std::size_t k0 = begin; k0 < vector_end; k0 += narrow_block) {
    const std::size_t len = std::min(narrow_block, vector_end - k0);
    for (std::size_t k = 0; k < len; k += 4) _mm256_store_pd(overflow + k, _mm256_setzero_pd());
    // y_i = [x_i (A/a_i)^-1]_{a_i}, and the overflow sum in scaled_residues' order.
    for (std::size_t i = 0; i < na; ++i) {
      const NarrowLanes a = lanes_for(c.from[i]);
      const __m256i w = splat(c.hat_inverse[i]);
      const __m256i w_shoup = splat(c.hat_inverse_shoup[i]);
      const __m256d inverse = _mm256_set1_pd(c.inverse_as_double[i]);
      const W* x = in + i * n + k0;
      for (std::size_t k = 0; k < len; k += 4) {
        const __m256i xs = load4(x + k);
        const __m256i r = subtract_if_at_least(mul_shoup_lazy_lanes(xs, w, w_shoup, a.q), a.q, a.q_minus_one);
        _mm256_store_si256(reinterpret_cast<__m256i*>(y[i] + k), r);
        const __m256d sum = _mm256_add_pd(_mm256_load_pd(overflow + k), _mm256_mul_pd(to_double(r), inverse));
        _mm256_store_pd(overflow + k, sum);
      }
    }
    for (std::size_t k = 0; k < len; k += 4) {
      const __m128i count = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_load_pd(overflow + k), _mm256_set1_pd(0.5)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(v + k), _mm256_cvtepi32_epi64(count));
    }
    // [sum_i y_i (A/a_i) - v A]_{b_j}, folding every third product.
    for (std::size_t j = first_target; j < end_target; ++j) {
      const NarrowLanes b = lanes_for(c.to[j]);
      for (std::size_t i = 0; i < na; ++i) hat[i] = splat(c.hat_mod_to[j * na + i]);
      const auto* over = reinterpret_cast<const long long*>(c.overflow_mod_to + j * (na + 1));
      W* o = out + (j - first_target) * n + k0;
      for (std::size_t k = 0; k < len; k += 4) {
        __m256i acc = _mm256_setzero_si256();
        for (std::size_t i = 0; i < na; ++i) {
          acc = _mm256_add_epi64(acc, _mm256_mul_epu32(_mm256_load_si256(reinterpret_cast<const __m256i*>(y[i] + k)),
                                                       hat[i]));
          if (i % 3 == 2 && i + 1 < na) acc = reduce_lanes(acc, b);
        }
        const __m256i r = reduce_lanes(acc, b);
        const __m256i correction =
            _mm256_i64gather_epi64(over, _mm256_load_si256(reinterpret_cast<const __m256i*>(v + k)), 8);
        const __m256i d = _mm256_add_epi64(_mm256_sub_epi64(r, correction), b.q);
        store4(o + k, subtract_if_at_least(d, b.q, b.q_minus_one));
      }
    }
  }
  convert_narrow_scalar(c, in, out, n, vector_end, end, first_target, end_target);
}

}  // namespace

void convert_narrow_avx2(const NarrowConversion& c, const u64* in, u64* out, std::size_t n, std::size_t begin,
                         std::size_t end, std::size_t first_target, std::size_t end_target) {
  convert_blocks(c, in, out, n, begin, end, first_target, end_target);
}

void convert_narrow_avx2(const NarrowConversion& c, const u32* in, u32* out, std::size_t n, std::size_t begin,
                         std::size_t end, std::size_t first_target, std::size_t end_target) {
  convert_blocks(c, in, out, n, begin, end, first_target, end_target);
}

}  // namespace fhelium::detail
