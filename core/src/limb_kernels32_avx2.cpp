// The key switch's inner product in 32-bit words on AVX2: eight residues per
// load, their even and odd lanes multiplied by vpmuludq into 64-bit sums.
#include <algorithm>

#include "limb_kernels32.hpp"
#include "narrow_lanes.hpp"

namespace fhelium::detail {
namespace {

using namespace narrow;

FHELIUM_AVX2 __m256i load8(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
FHELIUM_AVX2 __m256i load_lanes(const u64* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
FHELIUM_AVX2 void store_lanes(u64* p, __m256i x) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), x); }

// sum += x * y on the even (low) halves of the lanes.
FHELIUM_AVX2 void multiply_add(u64* sum, __m256i x, __m256i y) {
  store_lanes(sum, _mm256_add_epi64(load_lanes(sum), _mm256_mul_epu32(x, y)));
}

}  // namespace

__attribute__((target("avx2"))) void multiply_accumulate_avx2(const u32* const* x, const u32* const* kb,
                                                              const u32* const* ka, int digits,
                                                              const std::uint32_t* perm, std::size_t n,
                                                              const NarrowModulus& q, u32* acc0, u32* acc1) {
  constexpr std::size_t block = 512;  // the sums of a block stay in L1
  // Sums of the even and the odd coefficients of acc0 and acc1.
  alignas(32) u64 sums[4][block / 2];
  const NarrowLanes l = lanes_for(q);
  for (std::size_t k0 = 0; k0 < n; k0 += block) {
    const std::size_t len = std::min(block, n - k0);
    for (auto& s : sums) std::fill_n(s, len / 2, u64{0});
    for (int j = 0; j < digits; ++j) {
      const auto d = static_cast<std::size_t>(j);
      for (std::size_t k = 0; k < len; k += 8) {
        const __m256i xs = perm ? _mm256_i32gather_epi32(reinterpret_cast<const int*>(x[d]),
                                                          load8(perm + k0 + k), 4)
                                : load8(x[d] + k0 + k);
        const __m256i xs_odd = _mm256_srli_epi64(xs, 32);
        const __m256i b = load8(kb[d] + k0 + k);
        const __m256i a = load8(ka[d] + k0 + k);
        multiply_add(sums[0] + k / 2, xs, b);
        multiply_add(sums[1] + k / 2, xs_odd, _mm256_srli_epi64(b, 32));
        multiply_add(sums[2] + k / 2, xs, a);
        multiply_add(sums[3] + k / 2, xs_odd, _mm256_srli_epi64(a, 32));
      }
      if (j % 3 == 2 && j + 1 < digits) {  // three products of residues below 2^31 stay below 2^64
        for (auto& s : sums) {
          for (std::size_t i = 0; i < len / 2; i += 4) store_lanes(s + i, reduce_lanes(load_lanes(s + i), l));
        }
      }
    }
    for (std::size_t k = 0; k < len; k += 8) {
      const std::size_t i = k / 2;
      const __m256i even0 = reduce_lanes(load_lanes(sums[0] + i), l), odd0 = reduce_lanes(load_lanes(sums[1] + i), l);
      const __m256i even1 = reduce_lanes(load_lanes(sums[2] + i), l), odd1 = reduce_lanes(load_lanes(sums[3] + i), l);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc0 + k0 + k), _mm256_or_si256(even0, _mm256_slli_epi64(odd0, 32)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc1 + k0 + k), _mm256_or_si256(even1, _mm256_slli_epi64(odd1, 32)));
    }
  }
}

}  // namespace fhelium::detail
