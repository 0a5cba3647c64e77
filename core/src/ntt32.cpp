#include "fhelium/backend/ntt32.hpp"

#include <bit>
#include <string>

#include "fhelium/backend/ntt.hpp"
#include "fhelium/error.hpp"
#include "ntt32_kernels.hpp"
#include "ntt_kernels.hpp"

namespace fhelium {
namespace {

std::vector<u32> narrowed(const std::vector<u64>& values) { return {values.begin(), values.end()}; }

std::vector<u32> shoup_constants(const std::vector<u32>& values, u32 q) {
  std::vector<u32> out(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) out[k] = shoup(values[k], q);
  return out;
}

void check_modulus(u64 q) {
  if (q >= NttTable32::max_modulus) {
    throw ParameterError("NttTable32: the prime " + std::to_string(q) +
                         " is not below 2^31 (the 32-bit transform keeps values below 2q < 2^32)");
  }
}

// The transforms with every value reduced below q, radix 2: the portable path
// for primes from 2^30 (where Harvey's lazy bounds would overflow 32 bits).
void forward_reduced(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q) {
  for (std::uint64_t m = 1, t = n / 2; m < n; m <<= 1, t >>= 1) {
    for (std::uint64_t i = 0; i < m; ++i) {
      u32* x = a + 2 * i * t;
      for (std::uint64_t j = 0; j < t; ++j) {
        const u32 u = x[j];
        const u32 v = mul_shoup(x[j + t], roots[m + i], roots_shoup[m + i], q);
        x[j] = static_cast<u32>(add_mod(u, v, q));
        x[j + t] = static_cast<u32>(sub_mod(u, v, q));
      }
    }
  }
}

void inverse_reduced(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q) {
  for (std::uint64_t m = n / 2, t = 1; m >= 1; m >>= 1, t <<= 1) {
    for (std::uint64_t i = 0; i < m; ++i) {
      u32* x = a + 2 * i * t;
      for (std::uint64_t j = 0; j < t; ++j) {
        const u32 u = x[j];
        const u32 v = x[j + t];
        x[j] = static_cast<u32>(add_mod(u, v, q));
        x[j + t] = mul_shoup(static_cast<u32>(sub_mod(u, v, q)), roots[m + i], roots_shoup[m + i], q);
      }
    }
  }
}

NttTable checked_wide_table(std::uint64_t ring_degree, u32 q) {
  check_modulus(q);
  return NttTable(ring_degree, Modulus(q));
}

}  // namespace

NttTable32::NttTable32(std::uint64_t ring_degree, u32 q) : NttTable32(checked_wide_table(ring_degree, q)) {}

NttTable32::NttTable32(const NttTable& wide)
    : n_(wide.ring_degree()), log_n_(std::countr_zero(wide.ring_degree())), q_(static_cast<u32>(wide.modulus().value)) {
  check_modulus(wide.modulus().value);
  psi_ = static_cast<u32>(wide.psi());
  roots_ = narrowed(wide.roots());
  inv_roots_ = narrowed(wide.inverse_roots());
  roots_shoup_ = shoup_constants(roots_, q_);
  inv_roots_shoup_ = shoup_constants(inv_roots_, q_);
  inv_n_ = static_cast<u32>(wide.inverse_n());
  inv_n_shoup_ = shoup(inv_n_, q_);
}

void NttTable32::forward(u32* a) const {
  if (detail::cpu_has_avx2() && n_ >= detail::min_avx2_ring_degree32) {
    detail::forward_avx2(a, n_, roots_.data(), roots_shoup_.data(), q_);
  } else {
    forward_scalar(a);
  }
}

void NttTable32::forward_scalar(u32* a) const {
  if (q_ >= detail::lazy_modulus_limit32) {
    forward_reduced(a, n_, roots_.data(), roots_shoup_.data(), q_);
    return;
  }
  std::uint64_t m = 1;
  if (log_n_ & 1) {
    detail::forward_radix2_stage(a, n_, 1, roots_.data(), roots_shoup_.data(), q_);
    m = 2;
  }
  detail::forward_radix4_passes(a, n_, m, roots_.data(), roots_shoup_.data(), q_);
  detail::reduce_from_4q(a, n_, q_);
}

void NttTable32::inverse(u32* a) const {
  if (detail::cpu_has_avx2() && n_ >= detail::min_avx2_ring_degree32) {
    detail::inverse_avx2(a, n_, inv_roots_.data(), inv_roots_shoup_.data(), q_, inv_n_, inv_n_shoup_);
  } else {
    inverse_scalar(a);
  }
}

void NttTable32::inverse_scalar(u32* a) const {
  if (q_ >= detail::lazy_modulus_limit32) {
    inverse_reduced(a, n_, inv_roots_.data(), inv_roots_shoup_.data(), q_);
    for (std::uint64_t j = 0; j < n_; ++j) a[j] = mul_shoup(a[j], inv_n_, inv_n_shoup_, q_);
    return;
  }
  const std::uint64_t m = detail::inverse_radix4_passes(a, n_, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q_);
  if (m == 2) detail::inverse_radix2_stage(a, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q_);
  for (std::uint64_t j = 0; j < n_; ++j) a[j] = mul_shoup(a[j], inv_n_, inv_n_shoup_, q_);
}

}  // namespace fhelium
