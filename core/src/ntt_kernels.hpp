// NTT passes shared by the scalar and the AVX2 transforms, for 64-bit and
// 32-bit words (W). Harvey's lazy butterflies with Shoup constants: the
// forward transform keeps values in [0, 4q), the inverse in [0, 2q), so 4q
// must fit a word. Two stages per pass (radix 4) halve the loads and stores.
#pragma once

#include <cstdint>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail {

bool cpu_has_avx2();
// Whether the AVX2 paths apply to q: their lanes compare signed, which needs
// 4q < 2^63.
inline bool use_avx2(u64 q) { return cpu_has_avx2() && q < (u64{1} << 61); }
// The double-precision transforms (ntt_fma.cpp) for q < 2^44.
inline bool use_fma(u64 q) {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has && q < (u64{1} << 44);
}
void forward_fma(u64* a, std::uint64_t n, const double* roots, u64 q);
void inverse_fma(u64* a, std::uint64_t n, const double* roots, u64 q, u64 inv_n);
void forward_avx2(u64* a, std::uint64_t n, const u64* roots, const u64* roots_shoup, u64 q);
void inverse_avx2(u64* a, std::uint64_t n, const u64* roots, const u64* roots_shoup, u64 q, u64 inv_n,
                  u64 inv_n_shoup);

template <class W>
inline void forward_butterfly(W& x, W& y, W w, W w_shoup, W q, W two_q) {
  const W u = x >= two_q ? x - two_q : x;
  const W v = mul_shoup_lazy(y, w, w_shoup, q);
  x = u + v;
  y = u - v + two_q;
}

template <class W>
inline void inverse_butterfly(W& x, W& y, W w, W w_shoup, W q, W two_q) {
  const W u = x;
  const W v = y;
  const W s = u + v;
  x = s >= two_q ? s - two_q : s;
  y = mul_shoup_lazy(u - v + two_q, w, w_shoup, q);
}

// Forward stage m (m blocks of 2t, t = n / 2m).
template <class W>
inline void forward_radix2_stage(W* a, std::uint64_t n, std::uint64_t m, const W* roots, const W* roots_shoup, W q) {
  const std::uint64_t t = n / (2 * m);
  for (std::uint64_t i = 0; i < m; ++i) {
    W* x = a + 2 * i * t;
    for (std::uint64_t j = 0; j < t; ++j) forward_butterfly(x[j], x[j + t], roots[m + i], roots_shoup[m + i], q, 2 * q);
  }
}

// Forward stages m, 2m, 4m, ... up to n/2, two at a time (an even count).
template <class W>
inline void forward_radix4_passes(W* a, std::uint64_t n, std::uint64_t m, const W* roots, const W* roots_shoup, W q) {
  const W two_q = 2 * q;
  for (; m < n; m <<= 2) {
    const std::uint64_t t = n / (2 * m);
    const std::uint64_t t2 = t >> 1;
    for (std::uint64_t i = 0; i < m; ++i) {
      const W wa = roots[m + i], wa_shoup = roots_shoup[m + i];
      const W wb0 = roots[2 * m + 2 * i], wb0_shoup = roots_shoup[2 * m + 2 * i];
      const W wb1 = roots[2 * m + 2 * i + 1], wb1_shoup = roots_shoup[2 * m + 2 * i + 1];
      W* p0 = a + 2 * i * t;
      W* p1 = p0 + t2;
      W* p2 = p0 + t;
      W* p3 = p2 + t2;
      for (std::uint64_t j = 0; j < t2; ++j) {
        W x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
        forward_butterfly(x0, x2, wa, wa_shoup, q, two_q);
        forward_butterfly(x1, x3, wa, wa_shoup, q, two_q);
        forward_butterfly(x0, x1, wb0, wb0_shoup, q, two_q);
        forward_butterfly(x2, x3, wb1, wb1_shoup, q, two_q);
        p0[j] = x0;
        p1[j] = x1;
        p2[j] = x2;
        p3[j] = x3;
      }
    }
  }
}

template <class W>
inline void reduce_from_4q(W* a, std::uint64_t n, W q) {
  for (std::uint64_t j = 0; j < n; ++j) {
    W u = a[j];
    u = u >= 2 * q ? u - 2 * q : u;
    a[j] = u >= q ? u - q : u;
  }
}

// Inverse stage m (m / 2 blocks of size n / (m / 2)).
template <class W>
inline void inverse_radix2_stage(W* a, std::uint64_t n, std::uint64_t m, const W* roots, const W* roots_shoup, W q) {
  const std::uint64_t h = m >> 1;
  const std::uint64_t t = n / m;
  for (std::uint64_t i = 0; i < h; ++i) {
    W* x = a + 2 * i * t;
    for (std::uint64_t j = 0; j < t; ++j) inverse_butterfly(x[j], x[j + t], roots[h + i], roots_shoup[h + i], q, 2 * q);
  }
}

// Inverse stages m, m/2, ... two at a time while m >= stop * 2; returns the
// first stage not done.
template <class W>
inline std::uint64_t inverse_radix4_passes(W* a, std::uint64_t n, std::uint64_t m, std::uint64_t stop, const W* roots,
                                           const W* roots_shoup, W q) {
  const W two_q = 2 * q;
  for (; m >= 2 * stop; m >>= 2) {
    const std::uint64_t h = m >> 1;
    const std::uint64_t t = n / m;
    for (std::uint64_t i = 0; i < h / 2; ++i) {
      const W w0 = roots[h + 2 * i], w0_shoup = roots_shoup[h + 2 * i];
      const W w1 = roots[h + 2 * i + 1], w1_shoup = roots_shoup[h + 2 * i + 1];
      const W w = roots[h / 2 + i], w_shoup = roots_shoup[h / 2 + i];
      W* p0 = a + 4 * i * t;
      W* p1 = p0 + t;
      W* p2 = p1 + t;
      W* p3 = p2 + t;
      for (std::uint64_t j = 0; j < t; ++j) {
        W x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
        inverse_butterfly(x0, x1, w0, w0_shoup, q, two_q);
        inverse_butterfly(x2, x3, w1, w1_shoup, q, two_q);
        inverse_butterfly(x0, x2, w, w_shoup, q, two_q);
        inverse_butterfly(x1, x3, w, w_shoup, q, two_q);
        p0[j] = x0;
        p1[j] = x1;
        p2[j] = x2;
        p3[j] = x3;
      }
    }
  }
  return m;
}

}  // namespace fhelium::detail
