// AVX2 passes of the 32-bit NTT: eight lanes per instruction. The stages
// whose butterfly distance is below eight lanes (the last three of the
// forward transform, the first three of the inverse) shuffle two vectors so
// that each butterfly's pair meets lane to lane. Results are bit-identical to
// the scalar transform (the same integer arithmetic).
#include <immintrin.h>

#include <bit>

#include "avx2_lanes.hpp"
#include "ntt32_kernels.hpp"

namespace fhelium::detail {
namespace {

constexpr std::uint64_t lanes = 8;

struct Moduli {
  __m256i q, two_q;
};

// A root per lane with its Shoup constant, and that constant's odd lanes
// moved to the even positions (mul_epu32 reads the low half of each 64-bit
// lane).
struct Root {
  __m256i w, w_shoup, w_shoup_odd;
};

FHELIUM_AVX2 __m256i broadcast32(u32 value) { return _mm256_set1_epi32(static_cast<int>(value)); }
FHELIUM_AVX2 Root root(const u32* roots, const u32* roots_shoup, std::uint64_t k) {
  const __m256i w_shoup = broadcast32(roots_shoup[k]);
  return {broadcast32(roots[k]), w_shoup, w_shoup};
}
FHELIUM_AVX2 __m256i load8(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
FHELIUM_AVX2 void store8(u32* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// x - bound where x >= bound, else x (unsigned: x - bound wraps above x).
FHELIUM_AVX2 __m256i subtract_if_at_least(__m256i x, __m256i bound) {
  return _mm256_min_epu32(x, _mm256_sub_epi32(x, bound));
}

// x * w mod q in [0, 2q): the high halves of the even and the odd lanes'
// 32 x 32-bit products give the Shoup quotient.
FHELIUM_AVX2 __m256i mul_shoup_lazy(__m256i x, const Root& r, __m256i q) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(x, r.w_shoup), 32);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), r.w_shoup_odd);
  const __m256i quotient = _mm256_blend_epi32(even, odd, 0xAA);
  return _mm256_sub_epi32(_mm256_mullo_epi32(x, r.w), _mm256_mullo_epi32(quotient, q));
}

// Harvey's lazy butterflies. With q < 2^30 the forward transform keeps
// values below 4q and the inverse below 2q. With q < 2^31 (Tight) that would
// overflow 32 bits: the forward keeps them below 2q and the inverse below q,
// each product reduced once more.
template <bool Tight>
FHELIUM_AVX2 void forward_butterfly(__m256i& x, __m256i& y, const Root& w, const Moduli& m) {
  if constexpr (Tight) {
    const __m256i u = subtract_if_at_least(x, m.q);
    const __m256i v = subtract_if_at_least(mul_shoup_lazy(y, w, m.q), m.q);
    x = _mm256_add_epi32(u, v);
    y = _mm256_add_epi32(_mm256_sub_epi32(u, v), m.q);
  } else {
    const __m256i u = subtract_if_at_least(x, m.two_q);
    const __m256i v = mul_shoup_lazy(y, w, m.q);
    x = _mm256_add_epi32(u, v);
    y = _mm256_add_epi32(_mm256_sub_epi32(u, v), m.two_q);
  }
}

template <bool Tight>
FHELIUM_AVX2 void inverse_butterfly(__m256i& x, __m256i& y, const Root& w, const Moduli& m) {
  const __m256i u = x;
  const __m256i v = y;
  if constexpr (Tight) {
    x = subtract_if_at_least(_mm256_add_epi32(u, v), m.q);
    y = subtract_if_at_least(mul_shoup_lazy(_mm256_add_epi32(_mm256_sub_epi32(u, v), m.q), w, m.q), m.q);
  } else {
    x = subtract_if_at_least(_mm256_add_epi32(u, v), m.two_q);
    y = mul_shoup_lazy(_mm256_add_epi32(_mm256_sub_epi32(u, v), m.two_q), w, m.q);
  }
}

template <bool forward, bool Tight>
FHELIUM_AVX2 void butterfly(__m256i& x, __m256i& y, const Root& w, const Moduli& mod) {
  if constexpr (forward) {
    forward_butterfly<Tight>(x, y, w, mod);
  } else {
    inverse_butterfly<Tight>(x, y, w, mod);
  }
}

// One stage of butterfly distance t (a multiple of 8 lanes): block i of 2t
// values takes roots[n / 2t + i], in both directions.
template <bool forward, bool Tight>
FHELIUM_AVX2 void stage(u32* a, std::uint64_t n, std::uint64_t t, const u32* roots, const u32* roots_shoup,
                        const Moduli& mod) {
  const std::uint64_t first = n / (2 * t);
  for (std::uint64_t i = 0; i < first; ++i) {
    const Root w = root(roots, roots_shoup, first + i);
    u32* x = a + 2 * i * t;
    for (std::uint64_t j = 0; j < t; j += lanes) {
      __m256i u = load8(x + j), v = load8(x + j + t);
      butterfly<forward, Tight>(u, v, w, mod);
      store8(x + j, u);
      store8(x + j + t, v);
    }
  }
}

// The roots of `count` consecutive blocks spread over the lanes by `order`.
FHELIUM_AVX2 __m256i spread(const u32* p, int count, __m256i order) {
  const __m256i loaded = count == 8   ? load8(p)
                         : count == 4 ? _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))
                                      : _mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_permutevar8x32_epi32(loaded, order);
}

// A stage of distance t = 4, 2 or 1, inside the vectors: two vectors (16
// values) are shuffled so that the butterflies' pairs meet lane to lane,
// with each lane's block root, and shuffled back.
template <bool forward, bool Tight, int t>
FHELIUM_AVX2 void short_stage(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, const Moduli& mod) {
  constexpr int blocks = 8 / t;  // the blocks of 2t values in 16 values
  // Lane k of the shuffled x holds a value of block order[k] (counted from v0's first).
  const __m256i order = t == 4   ? _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)
                        : t == 2 ? _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3)
                                 : _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  const std::uint64_t first = n / (2 * t);
  for (std::uint64_t j = 0; j < n; j += 2 * lanes) {
    const std::uint64_t block = first + j / (2 * t);
    const __m256i w_shoup = spread(roots_shoup + block, blocks, order);
    const Root w{spread(roots + block, blocks, order), w_shoup, _mm256_srli_epi64(w_shoup, 32)};
    const __m256i v0 = load8(a + j), v1 = load8(a + j + lanes);
    __m256i x, y;
    if constexpr (t == 4) {
      x = _mm256_permute2x128_si256(v0, v1, 0x20);
      y = _mm256_permute2x128_si256(v0, v1, 0x31);
    } else if constexpr (t == 2) {
      x = _mm256_unpacklo_epi64(v0, v1);
      y = _mm256_unpackhi_epi64(v0, v1);
    } else {
      x = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1), 0x88));
      y = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1), 0xDD));
    }
    butterfly<forward, Tight>(x, y, w, mod);
    if constexpr (t == 4) {
      store8(a + j, _mm256_permute2x128_si256(x, y, 0x20));
      store8(a + j + lanes, _mm256_permute2x128_si256(x, y, 0x31));
    } else if constexpr (t == 2) {
      store8(a + j, _mm256_unpacklo_epi64(x, y));
      store8(a + j + lanes, _mm256_unpackhi_epi64(x, y));
    } else {
      store8(a + j, _mm256_unpacklo_epi32(x, y));
      store8(a + j + lanes, _mm256_unpackhi_epi32(x, y));
    }
  }
}

template <bool Tight>
FHELIUM_AVX2 void forward_passes(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q) {
  const Moduli mod{broadcast32(q), broadcast32(2 * q)};
  std::uint64_t m = 1;
  if (std::countr_zero(n) & 1) {  // an odd count: one radix-2 stage first
    stage<true, Tight>(a, n, n / 2, roots, roots_shoup, mod);
    m = 2;
  }
  // Two stages per pass while the smaller distance, n / 4m, fills the lanes.
  for (; n / (4 * m) >= lanes; m <<= 2) {
    const std::uint64_t t = n / (2 * m);
    const std::uint64_t t2 = t >> 1;
    for (std::uint64_t i = 0; i < m; ++i) {
      const Root wa = root(roots, roots_shoup, m + i);
      const Root wb0 = root(roots, roots_shoup, 2 * m + 2 * i);
      const Root wb1 = root(roots, roots_shoup, 2 * m + 2 * i + 1);
      u32* p0 = a + 2 * i * t;
      u32* p1 = p0 + t2;
      u32* p2 = p0 + t;
      u32* p3 = p2 + t2;
      for (std::uint64_t j = 0; j < t2; j += lanes) {
        __m256i x0 = load8(p0 + j), x1 = load8(p1 + j), x2 = load8(p2 + j), x3 = load8(p3 + j);
        forward_butterfly<Tight>(x0, x2, wa, mod);
        forward_butterfly<Tight>(x1, x3, wa, mod);
        forward_butterfly<Tight>(x0, x1, wb0, mod);
        forward_butterfly<Tight>(x2, x3, wb1, mod);
        store8(p0 + j, x0);
        store8(p1 + j, x1);
        store8(p2 + j, x2);
        store8(p3 + j, x3);
      }
    }
  }
  // Distances 8, 4, 2 and 1 are left (an even count of stages).
  stage<true, Tight>(a, n, 8, roots, roots_shoup, mod);
  short_stage<true, Tight, 4>(a, n, roots, roots_shoup, mod);
  short_stage<true, Tight, 2>(a, n, roots, roots_shoup, mod);
  short_stage<true, Tight, 1>(a, n, roots, roots_shoup, mod);
  for (std::uint64_t j = 0; j < n; j += lanes) {
    store8(a + j, subtract_if_at_least(subtract_if_at_least(load8(a + j), mod.two_q), mod.q));
  }
}

template <bool Tight>
FHELIUM_AVX2 void inverse_passes(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q, u32 inv_n,
                                 u32 inv_n_shoup) {
  const Moduli mod{broadcast32(q), broadcast32(2 * q)};
  // Distances 1, 2, 4 and 8 one stage at a time, then two stages per pass.
  short_stage<false, Tight, 1>(a, n, roots, roots_shoup, mod);
  short_stage<false, Tight, 2>(a, n, roots, roots_shoup, mod);
  short_stage<false, Tight, 4>(a, n, roots, roots_shoup, mod);
  stage<false, Tight>(a, n, 8, roots, roots_shoup, mod);
  std::uint64_t m = n / 16;
  for (; m >= 4; m >>= 2) {
    const std::uint64_t h = m >> 1;
    const std::uint64_t t = n / m;
    for (std::uint64_t i = 0; i < h / 2; ++i) {
      const Root w0 = root(roots, roots_shoup, h + 2 * i);
      const Root w1 = root(roots, roots_shoup, h + 2 * i + 1);
      const Root w = root(roots, roots_shoup, h / 2 + i);
      u32* p0 = a + 4 * i * t;
      u32* p1 = p0 + t;
      u32* p2 = p1 + t;
      u32* p3 = p2 + t;
      for (std::uint64_t j = 0; j < t; j += lanes) {
        __m256i x0 = load8(p0 + j), x1 = load8(p1 + j), x2 = load8(p2 + j), x3 = load8(p3 + j);
        inverse_butterfly<Tight>(x0, x1, w0, mod);
        inverse_butterfly<Tight>(x2, x3, w1, mod);
        inverse_butterfly<Tight>(x0, x2, w, mod);
        inverse_butterfly<Tight>(x1, x3, w, mod);
        store8(p0 + j, x0);
        store8(p1 + j, x1);
        store8(p2 + j, x2);
        store8(p3 + j, x3);
      }
    }
  }
  if (m == 2) stage<false, Tight>(a, n, n / 2, roots, roots_shoup, mod);
  const Root scale{broadcast32(inv_n), broadcast32(inv_n_shoup), broadcast32(inv_n_shoup)};
  for (std::uint64_t j = 0; j < n; j += lanes) {
    store8(a + j, subtract_if_at_least(mul_shoup_lazy(load8(a + j), scale, mod.q), mod.q));
  }
}

}  // namespace

__attribute__((target("avx2"))) void forward_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup,
                                                  u32 q) {
  if (q >= lazy_modulus_limit32) {
    forward_passes<true>(a, n, roots, roots_shoup, q);
  } else {
    forward_passes<false>(a, n, roots, roots_shoup, q);
  }
}

__attribute__((target("avx2"))) void inverse_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup,
                                                  u32 q, u32 inv_n, u32 inv_n_shoup) {
  if (q >= lazy_modulus_limit32) {
    inverse_passes<true>(a, n, roots, roots_shoup, q, inv_n, inv_n_shoup);
  } else {
    inverse_passes<false>(a, n, roots, roots_shoup, q, inv_n, inv_n_shoup);
  }
}

__attribute__((target("avx2"))) void narrow_words_avx2(const u64* in, u32* out, std::uint64_t n) {
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (std::uint64_t k = 0; k < n; k += lanes) {
    const __m256i low = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + k)), even);
    const __m256i high =
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + k + 4)), even);
    store8(out + k, _mm256_permute2x128_si256(low, high, 0x20));
  }
}

__attribute__((target("avx2"))) void widen_words_avx2(const u32* in, u64* out, std::uint64_t n) {
  for (std::uint64_t k = 0; k < n; k += 4) {
    const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), _mm256_cvtepu32_epi64(four));
  }
}

}  // namespace fhelium::detail
