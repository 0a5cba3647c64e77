// AVX2 stages of the NTT (lane arithmetic in avx2_lanes.hpp). The last two
// stages (butterfly distances 2 and 1) run on transposed groups of four.
// Results are bit-identical to the scalar transform (exact integer arithmetic).
#include <immintrin.h>

#include <bit>
#include <initializer_list>

#include "avx2_lanes.hpp"
#include "ntt_kernels.hpp"

namespace fhelium::detail {

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

namespace {

using namespace avx2;

FHELIUM_AVX2 void forward_butterfly(__m256i& x, __m256i& y, const Constant& w, const Constant& w_shoup,
                                    const Lanes& l) {
  const __m256i u = subtract_if_at_least(x, l.two_q, l.two_q_minus_one);
  const __m256i v = mul_shoup_lazy(y, w, w_shoup, l);
  x = _mm256_add_epi64(u, v);
  y = _mm256_add_epi64(_mm256_sub_epi64(u, v), l.two_q);
}

FHELIUM_AVX2 void inverse_butterfly(__m256i& x, __m256i& y, const Constant& w, const Constant& w_shoup,
                                    const Lanes& l) {
  const __m256i u = x;
  const __m256i v = y;
  x = subtract_if_at_least(_mm256_add_epi64(u, v), l.two_q, l.two_q_minus_one);
  y = mul_shoup_lazy(_mm256_add_epi64(_mm256_sub_epi64(u, v), l.two_q), w, w_shoup, l);
}


// Per-lane constants (four different roots).
FHELIUM_AVX2 Constant lanes_of(__m256i values) { return {values, _mm256_srli_epi64(values, 32)}; }

}  // namespace

__attribute__((target("avx2"))) void forward_avx2(u64* a, std::uint64_t n, const u64* roots,
                                                  const u64* roots_shoup, u64 q) {
  const Lanes l = lanes_for(q);
  // Vector stages are those with butterfly distance t = n / 2m >= 4: m <= n / 8.
  std::uint64_t m = 1;
  if ((std::countr_zero(n) - 2) % 2 == 1) {  // an odd count: one radix-2 stage first
    const Constant w = broadcast(roots[1]), w_shoup = broadcast(roots_shoup[1]);
    const std::uint64_t t = n / 2;
    for (std::uint64_t j = 0; j < t; j += 4) {
      __m256i x = load(a + j), y = load(a + j + t);
      forward_butterfly(x, y, w, w_shoup, l);
      store(a + j, x);
      store(a + j + t, y);
    }
    m = 2;
  }
  for (; 16 * m <= n; m <<= 2) {  // stages m and 2m, distances t and t / 2 >= 4
    const std::uint64_t t = n / (2 * m);
    const std::uint64_t t2 = t / 2;
    for (std::uint64_t i = 0; i < m; ++i) {
      const Constant wa = broadcast(roots[m + i]), wa_shoup = broadcast(roots_shoup[m + i]);
      const Constant wb0 = broadcast(roots[2 * m + 2 * i]), wb0_shoup = broadcast(roots_shoup[2 * m + 2 * i]);
      const Constant wb1 = broadcast(roots[2 * m + 2 * i + 1]), wb1_shoup = broadcast(roots_shoup[2 * m + 2 * i + 1]);
      u64* p0 = a + 2 * i * t;
      u64* p1 = p0 + t2;
      u64* p2 = p0 + t;
      u64* p3 = p2 + t2;
      for (std::uint64_t j = 0; j < t2; j += 4) {
        __m256i x0 = load(p0 + j), x1 = load(p1 + j), x2 = load(p2 + j), x3 = load(p3 + j);
        forward_butterfly(x0, x2, wa, wa_shoup, l);
        forward_butterfly(x1, x3, wa, wa_shoup, l);
        forward_butterfly(x0, x1, wb0, wb0_shoup, l);
        forward_butterfly(x2, x3, wb1, wb1_shoup, l);
        store(p0 + j, x0);
        store(p1 + j, x1);
        store(p2 + j, x2);
        store(p3 + j, x3);
      }
    }
  }
  // Distances 2 and 1 inside groups of four consecutive values: transpose
  // four groups so each lane holds one group, with per-lane roots, and fuse
  // the final reduction to [0, q).
  for (std::uint64_t i = 0; i < m; i += 4) {
    u64* p = a + 4 * i;
    __m256i x0 = load(p), x1 = load(p + 4), x2 = load(p + 8), x3 = load(p + 12);
    transpose(x0, x1, x2, x3);
    const Constant wa = lanes_of(load(roots + m + i)), wa_shoup = lanes_of(load(roots_shoup + m + i));
    forward_butterfly(x0, x2, wa, wa_shoup, l);
    forward_butterfly(x1, x3, wa, wa_shoup, l);
    __m256i w0, w1, w0_shoup, w1_shoup;
    deinterleave(roots + 2 * m + 2 * i, w0, w1);
    deinterleave(roots_shoup + 2 * m + 2 * i, w0_shoup, w1_shoup);
    forward_butterfly(x0, x1, lanes_of(w0), lanes_of(w0_shoup), l);
    forward_butterfly(x2, x3, lanes_of(w1), lanes_of(w1_shoup), l);
    for (__m256i* x : {&x0, &x1, &x2, &x3}) {
      *x = subtract_if_at_least(subtract_if_at_least(*x, l.two_q, l.two_q_minus_one), l.q_v, l.q_minus_one);
    }
    transpose(x0, x1, x2, x3);
    store(p, x0);
    store(p + 4, x1);
    store(p + 8, x2);
    store(p + 12, x3);
  }
}

__attribute__((target("avx2"))) void inverse_avx2(u64* a, std::uint64_t n, const u64* roots,
                                                  const u64* roots_shoup, u64 q, u64 inv_n, u64 inv_n_shoup) {
  const Lanes l = lanes_for(q);
  // Distances 1 and 2 inside groups of four consecutive values (transposed,
  // per-lane roots), then vector stages m = n/4 .. 2.
  {
    const std::uint64_t h = n / 2;
    for (std::uint64_t i = 0; i < n / 4; i += 4) {
      u64* p = a + 4 * i;
      __m256i x0 = load(p), x1 = load(p + 4), x2 = load(p + 8), x3 = load(p + 12);
      transpose(x0, x1, x2, x3);
      __m256i w0, w1, w0_shoup, w1_shoup;
      deinterleave(roots + h + 2 * i, w0, w1);
      deinterleave(roots_shoup + h + 2 * i, w0_shoup, w1_shoup);
      inverse_butterfly(x0, x1, lanes_of(w0), lanes_of(w0_shoup), l);
      inverse_butterfly(x2, x3, lanes_of(w1), lanes_of(w1_shoup), l);
      const Constant w = lanes_of(load(roots + h / 2 + i)), w_shoup = lanes_of(load(roots_shoup + h / 2 + i));
      inverse_butterfly(x0, x2, w, w_shoup, l);
      inverse_butterfly(x1, x3, w, w_shoup, l);
      transpose(x0, x1, x2, x3);
      store(p, x0);
      store(p + 4, x1);
      store(p + 8, x2);
      store(p + 12, x3);
    }
  }
  std::uint64_t m = n / 4;
  for (; m >= 4; m >>= 2) {  // stages m and m / 2, distances t and 2t
    const std::uint64_t h = m / 2;
    const std::uint64_t t = n / m;
    for (std::uint64_t i = 0; i < h / 2; ++i) {
      const Constant w0 = broadcast(roots[h + 2 * i]), w0_shoup = broadcast(roots_shoup[h + 2 * i]);
      const Constant w1 = broadcast(roots[h + 2 * i + 1]), w1_shoup = broadcast(roots_shoup[h + 2 * i + 1]);
      const Constant w = broadcast(roots[h / 2 + i]), w_shoup = broadcast(roots_shoup[h / 2 + i]);
      u64* p0 = a + 4 * i * t;
      u64* p1 = p0 + t;
      u64* p2 = p1 + t;
      u64* p3 = p2 + t;
      for (std::uint64_t j = 0; j < t; j += 4) {
        __m256i x0 = load(p0 + j), x1 = load(p1 + j), x2 = load(p2 + j), x3 = load(p3 + j);
        inverse_butterfly(x0, x1, w0, w0_shoup, l);
        inverse_butterfly(x2, x3, w1, w1_shoup, l);
        inverse_butterfly(x0, x2, w, w_shoup, l);
        inverse_butterfly(x1, x3, w, w_shoup, l);
        store(p0 + j, x0);
        store(p1 + j, x1);
        store(p2 + j, x2);
        store(p3 + j, x3);
      }
    }
  }
  if (m == 2) {  // an odd count: the last stage alone
    const Constant w = broadcast(roots[1]), w_shoup = broadcast(roots_shoup[1]);
    const std::uint64_t t = n / 2;
    for (std::uint64_t j = 0; j < t; j += 4) {
      __m256i x = load(a + j), y = load(a + j + t);
      inverse_butterfly(x, y, w, w_shoup, l);
      store(a + j, x);
      store(a + j + t, y);
    }
  }
  const Constant scale = broadcast(inv_n), scale_shoup = broadcast(inv_n_shoup);
  for (std::uint64_t j = 0; j < n; j += 4) {
    store(a + j, subtract_if_at_least(mul_shoup_lazy(load(a + j), scale, scale_shoup, l), l.q_v, l.q_minus_one));
  }
}

}  // namespace fhelium::detail
