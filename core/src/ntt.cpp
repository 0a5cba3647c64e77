#include "fhelium/ntt.hpp"

#include <bit>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"

namespace fhelium {

std::uint32_t bit_reverse(std::uint32_t x, int bits) {
  std::uint32_t r = 0;
  for (int i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
}

NttTable::NttTable(std::uint64_t ring_degree, const Modulus& modulus)
    : n_(ring_degree), log_n_(std::countr_zero(ring_degree)), modulus_(modulus) {
  const u64 q = modulus.value;
  psi_ = minimal_primitive_root(2 * n_, q);
  const u64 psi_inv = inv_mod(psi_, modulus);
  roots_.resize(n_);
  roots_shoup_.resize(n_);
  inv_roots_.resize(n_);
  inv_roots_shoup_.resize(n_);
  u64 power = 1;
  u64 inv_power = 1;
  for (std::uint64_t k = 0; k < n_; ++k) {
    const auto index = bit_reverse(static_cast<std::uint32_t>(k), log_n_);
    roots_[index] = power;
    inv_roots_[index] = inv_power;
    power = mul_mod(power, psi_, modulus);
    inv_power = mul_mod(inv_power, psi_inv, modulus);
  }
  for (std::uint64_t k = 0; k < n_; ++k) {
    roots_shoup_[k] = shoup(roots_[k], q);
    inv_roots_shoup_[k] = shoup(inv_roots_[k], q);
  }
  inv_n_ = inv_mod(n_ % q, modulus);
  inv_n_shoup_ = shoup(inv_n_, q);
}

namespace {

// Harvey butterflies with Shoup constants. Forward: inputs and outputs in
// [0, 4q). Inverse: inputs and outputs in [0, 2q).
inline void forward_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q, u64 two_q) {
  u64 u = x >= two_q ? x - two_q : x;
  const u64 v = mul_shoup_lazy(y, w, w_shoup, q);
  x = u + v;
  y = u - v + two_q;
}

inline void inverse_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q, u64 two_q) {
  const u64 u = x;
  const u64 v = y;
  const u64 s = u + v;
  x = s >= two_q ? s - two_q : s;
  y = mul_shoup_lazy(u - v + two_q, w, w_shoup, q);
}

}  // namespace

// Two stages per pass (radix 4) halve the loads and stores; an odd stage
// count starts (forward) or ends (inverse) with one radix-2 stage.
void NttTable::forward(u64* a) const {
  const u64 q = modulus_.value;
  const u64 two_q = 2 * q;
  std::uint64_t m = 1;
  std::uint64_t t = n_;
  if (log_n_ & 1) {
    t >>= 1;
    for (std::uint64_t j = 0; j < t; ++j) forward_butterfly(a[j], a[j + t], roots_[1], roots_shoup_[1], q, two_q);
    m = 2;
  }
  for (; m < n_; m <<= 2) {
    t >>= 1;
    const std::uint64_t t2 = t >> 1;
    for (std::uint64_t i = 0; i < m; ++i) {
      const u64 wa = roots_[m + i], wa_shoup = roots_shoup_[m + i];
      const u64 wb0 = roots_[2 * m + 2 * i], wb0_shoup = roots_shoup_[2 * m + 2 * i];
      const u64 wb1 = roots_[2 * m + 2 * i + 1], wb1_shoup = roots_shoup_[2 * m + 2 * i + 1];
      u64* p0 = a + 2 * i * t;
      u64* p1 = p0 + t2;
      u64* p2 = p0 + t;
      u64* p3 = p2 + t2;
      for (std::uint64_t j = 0; j < t2; ++j) {
        u64 x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
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
    t = t2;
  }
  for (std::uint64_t j = 0; j < n_; ++j) {
    u64 u = a[j];
    u = u >= two_q ? u - two_q : u;
    a[j] = u >= q ? u - q : u;
  }
}

void NttTable::inverse(u64* a) const {
  const u64 q = modulus_.value;
  const u64 two_q = 2 * q;
  std::uint64_t t = 1;
  std::uint64_t m = n_;
  for (; m >= 4; m >>= 2) {
    const std::uint64_t h = m >> 1;
    for (std::uint64_t i = 0; i < h / 2; ++i) {
      const u64 w0 = inv_roots_[h + 2 * i], w0_shoup = inv_roots_shoup_[h + 2 * i];
      const u64 w1 = inv_roots_[h + 2 * i + 1], w1_shoup = inv_roots_shoup_[h + 2 * i + 1];
      const u64 w = inv_roots_[h / 2 + i], w_shoup = inv_roots_shoup_[h / 2 + i];
      u64* p0 = a + 4 * i * t;
      u64* p1 = p0 + t;
      u64* p2 = p1 + t;
      u64* p3 = p2 + t;
      for (std::uint64_t j = 0; j < t; ++j) {
        u64 x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
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
    t <<= 2;
  }
  if (m == 2) {
    for (std::uint64_t j = 0; j < t; ++j) inverse_butterfly(a[j], a[j + t], inv_roots_[1], inv_roots_shoup_[1], q, two_q);
  }
  for (std::uint64_t j = 0; j < n_; ++j) {
    a[j] = mul_shoup(a[j], inv_n_, inv_n_shoup_, q);
  }
}

}  // namespace fhelium
