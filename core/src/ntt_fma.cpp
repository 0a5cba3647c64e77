// The NTT in double precision for primes below 2^44 (AVX2 + FMA). Residues
// and every intermediate are integers below 2^53, so a product splits exactly
// into h + l (h = fl(x w), l = fma(x, w, -h)) and is reduced with a rounded
// quotient: each butterfly is exact integer arithmetic, four lanes with six
// floating-point instructions instead of the integer path's nine 32-bit
// multiplies and about twenty other instructions. Outputs are the canonical
// residues, so results are bit-identical to the integer transforms.
//
// Ranges (q < 2^44): a reduced product is within 0.67 q of zero (quotient
// error below 0.63, |l| below 0.04 q), so the forward transform's values grow
// by at most 0.67 q per stage: below 12.4 q < 2^48 after 17 stages. The
// inverse transform's sums would double per stage; each radix-4 pass brings
// the one output that sums four inputs back near zero.
#include <immintrin.h>

#include <bit>
#include <initializer_list>

#include "avx2_lanes.hpp"
#include "ntt_kernels.hpp"

namespace fhelium::detail {
namespace {

#define FHELIUM_FMA __attribute__((target("avx2,fma"), always_inline)) inline

struct Prime {
  __m256d q;
  __m256d q_inverse;  // 1.0 / q
};

FHELIUM_FMA Prime prime_for(u64 q) {
  return {_mm256_set1_pd(static_cast<double>(q)), _mm256_set1_pd(1.0 / static_cast<double>(q))};
}

FHELIUM_FMA __m256d nearest(__m256d x) { return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// x w minus a multiple of q, within 0.67 q of zero.
FHELIUM_FMA __m256d mul_reduce(__m256d x, __m256d w, const Prime& p) {
  const __m256d h = _mm256_mul_pd(x, w);
  const __m256d l = _mm256_fmsub_pd(x, w, h);  // x w - h, exact
  const __m256d quotient = nearest(_mm256_mul_pd(h, p.q_inverse));
  return _mm256_add_pd(_mm256_fnmadd_pd(quotient, p.q, h), l);
}

// x minus the nearest multiple of q: within 0.51 q of zero.
FHELIUM_FMA __m256d center(__m256d x, const Prime& p) {
  return _mm256_fnmadd_pd(nearest(_mm256_mul_pd(x, p.q_inverse)), p.q, x);
}

// The canonical residue in [0, q) of an integer-valued x (|x| < 2^50).
FHELIUM_FMA __m256d canonical(__m256d x, const Prime& p) {
  const __m256d quotient = _mm256_round_pd(_mm256_mul_pd(x, p.q_inverse), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(quotient, p.q, x);  // in (-q, 2q): the quotient may be one off
  r = _mm256_add_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_LT_OQ), p.q));
  return _mm256_sub_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, p.q, _CMP_GE_OQ), p.q));
}

// Integers in [0, 2^52) between their u64 and double forms, through 2^52's bits.
FHELIUM_FMA __m256d to_double(__m256i x) {
  const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
  return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, _mm256_castpd_si256(two52))), two52);
}

FHELIUM_FMA __m256i to_u64(__m256d x) {
  const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
  return _mm256_xor_si256(_mm256_castpd_si256(_mm256_add_pd(x, two52)), _mm256_castpd_si256(two52));
}

FHELIUM_FMA __m256d load(const u64* p) { return _mm256_loadu_pd(reinterpret_cast<const double*>(p)); }
FHELIUM_FMA void store(u64* p, __m256d v) { _mm256_storeu_pd(reinterpret_cast<double*>(p), v); }

FHELIUM_FMA void forward_butterfly(__m256d& x, __m256d& y, __m256d w, const Prime& p) {
  const __m256d v = mul_reduce(y, w, p);
  y = _mm256_sub_pd(x, v);
  x = _mm256_add_pd(x, v);
}

FHELIUM_FMA void inverse_butterfly(__m256d& x, __m256d& y, __m256d w, const Prime& p) {
  const __m256d difference = _mm256_sub_pd(x, y);
  x = _mm256_add_pd(x, y);
  y = mul_reduce(difference, w, p);
}

// The integer lanes' 4x4 transpose and deinterleave (avx2_lanes.hpp) on the
// same bits.
FHELIUM_FMA void transpose(__m256d& v0, __m256d& v1, __m256d& v2, __m256d& v3) {
  __m256i x0 = _mm256_castpd_si256(v0), x1 = _mm256_castpd_si256(v1), x2 = _mm256_castpd_si256(v2),
          x3 = _mm256_castpd_si256(v3);
  avx2::transpose(x0, x1, x2, x3);
  v0 = _mm256_castsi256_pd(x0);
  v1 = _mm256_castsi256_pd(x1);
  v2 = _mm256_castsi256_pd(x2);
  v3 = _mm256_castsi256_pd(x3);
}

FHELIUM_FMA void deinterleave(const double* p, __m256d& even, __m256d& odd) {
  __m256i e, o;
  avx2::deinterleave(reinterpret_cast<const u64*>(p), e, o);
  even = _mm256_castsi256_pd(e);
  odd = _mm256_castsi256_pd(o);
}

}  // namespace

__attribute__((target("avx2,fma"))) void forward_fma(u64* a, std::uint64_t n, const double* roots, u64 q) {
  const Prime p = prime_for(q);
  for (std::uint64_t j = 0; j < n; j += 4) {
    store(a + j, to_double(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j))));
  }
  std::uint64_t m = 1;
  if ((std::countr_zero(n) - 2) % 2 == 1) {  // an odd count: one radix-2 stage first
    const __m256d w = _mm256_set1_pd(roots[1]);
    const std::uint64_t t = n / 2;
    for (std::uint64_t j = 0; j < t; j += 4) {
      __m256d x = load(a + j), y = load(a + j + t);
      forward_butterfly(x, y, w, p);
      store(a + j, x);
      store(a + j + t, y);
    }
    m = 2;
  }
  for (; 16 * m <= n; m <<= 2) {  // stages m and 2m, distances t and t / 2 >= 4
    const std::uint64_t t = n / (2 * m);
    const std::uint64_t t2 = t / 2;
    for (std::uint64_t i = 0; i < m; ++i) {
      const __m256d wa = _mm256_set1_pd(roots[m + i]);
      const __m256d wb0 = _mm256_set1_pd(roots[2 * m + 2 * i]);
      const __m256d wb1 = _mm256_set1_pd(roots[2 * m + 2 * i + 1]);
      u64* p0 = a + 2 * i * t;
      u64* p1 = p0 + t2;
      u64* p2 = p0 + t;
      u64* p3 = p2 + t2;
      for (std::uint64_t j = 0; j < t2; j += 4) {
        __m256d x0 = load(p0 + j), x1 = load(p1 + j), x2 = load(p2 + j), x3 = load(p3 + j);
        forward_butterfly(x0, x2, wa, p);
        forward_butterfly(x1, x3, wa, p);
        forward_butterfly(x0, x1, wb0, p);
        forward_butterfly(x2, x3, wb1, p);
        store(p0 + j, x0);
        store(p1 + j, x1);
        store(p2 + j, x2);
        store(p3 + j, x3);
      }
    }
  }
  // Distances 2 and 1 on transposed groups of four (per-lane roots), then the
  // canonical residues back as words.
  for (std::uint64_t i = 0; i < m; i += 4) {
    u64* g = a + 4 * i;
    __m256d x0 = load(g), x1 = load(g + 4), x2 = load(g + 8), x3 = load(g + 12);
    transpose(x0, x1, x2, x3);
    const __m256d wa = _mm256_loadu_pd(roots + m + i);
    forward_butterfly(x0, x2, wa, p);
    forward_butterfly(x1, x3, wa, p);
    __m256d w0, w1;
    deinterleave(roots + 2 * m + 2 * i, w0, w1);
    forward_butterfly(x0, x1, w0, p);
    forward_butterfly(x2, x3, w1, p);
    transpose(x0, x1, x2, x3);
    std::uint64_t offset = 0;
    for (__m256d x : {x0, x1, x2, x3}) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(g + offset), to_u64(canonical(x, p)));
      offset += 4;
    }
  }
}

__attribute__((target("avx2,fma"))) void inverse_fma(u64* a, std::uint64_t n, const double* roots, u64 q,
                                                     u64 inv_n) {
  const Prime p = prime_for(q);
  // Distances 1 and 2 on transposed groups of four, read as words.
  {
    const std::uint64_t h = n / 2;
    for (std::uint64_t i = 0; i < n / 4; i += 4) {
      u64* g = a + 4 * i;
      __m256d x[4];
      for (std::uint64_t r = 0; r < 4; ++r) {
        x[r] = to_double(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 4 * r)));
      }
      transpose(x[0], x[1], x[2], x[3]);
      __m256d w0, w1;
      deinterleave(roots + h + 2 * i, w0, w1);
      inverse_butterfly(x[0], x[1], w0, p);
      inverse_butterfly(x[2], x[3], w1, p);
      const __m256d w = _mm256_loadu_pd(roots + h / 2 + i);
      inverse_butterfly(x[0], x[2], w, p);
      inverse_butterfly(x[1], x[3], w, p);
      x[0] = center(x[0], p);  // the sum of four inputs
      transpose(x[0], x[1], x[2], x[3]);
      for (std::uint64_t r = 0; r < 4; ++r) store(g + 4 * r, x[r]);
    }
  }
  std::uint64_t m = n / 4;
  for (; m >= 4; m >>= 2) {  // stages m and m / 2, distances t and 2t
    const std::uint64_t h = m / 2;
    const std::uint64_t t = n / m;
    for (std::uint64_t i = 0; i < h / 2; ++i) {
      const __m256d w0 = _mm256_set1_pd(roots[h + 2 * i]);
      const __m256d w1 = _mm256_set1_pd(roots[h + 2 * i + 1]);
      const __m256d w = _mm256_set1_pd(roots[h / 2 + i]);
      u64* p0 = a + 4 * i * t;
      u64* p1 = p0 + t;
      u64* p2 = p1 + t;
      u64* p3 = p2 + t;
      for (std::uint64_t j = 0; j < t; j += 4) {
        __m256d x0 = load(p0 + j), x1 = load(p1 + j), x2 = load(p2 + j), x3 = load(p3 + j);
        inverse_butterfly(x0, x1, w0, p);
        inverse_butterfly(x2, x3, w1, p);
        inverse_butterfly(x0, x2, w, p);
        inverse_butterfly(x1, x3, w, p);
        store(p0 + j, center(x0, p));
        store(p1 + j, x1);
        store(p2 + j, x2);
        store(p3 + j, x3);
      }
    }
  }
  if (m == 2) {  // an odd count: the last stage alone
    const __m256d w = _mm256_set1_pd(roots[1]);
    const std::uint64_t t = n / 2;
    for (std::uint64_t j = 0; j < t; j += 4) {
      __m256d x = load(a + j), y = load(a + j + t);
      inverse_butterfly(x, y, w, p);
      store(a + j, x);
      store(a + j + t, y);
    }
  }
  const __m256d scale = _mm256_set1_pd(static_cast<double>(inv_n));
  for (std::uint64_t j = 0; j < n; j += 4) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + j), to_u64(canonical(mul_reduce(load(a + j), scale, p), p)));
  }
}

}  // namespace fhelium::detail
