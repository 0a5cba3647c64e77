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

// The 64-bit table of the same prime: the same psi and root order.
NttTable wide_table(std::uint64_t ring_degree, u32 q) {
  if (q >= NttTable32::max_modulus) {
    throw ParameterError("NttTable32: the prime " + std::to_string(q) +
                         " is not below 2^30 (the 32-bit transform keeps values below 4q < 2^32)");
  }
  return NttTable(ring_degree, Modulus(q));
}

}  // namespace

NttTable32::NttTable32(std::uint64_t ring_degree, u32 q)
    : n_(ring_degree), log_n_(std::countr_zero(ring_degree)), q_(q) {
  const NttTable wide = wide_table(ring_degree, q);
  psi_ = static_cast<u32>(wide.psi());
  roots_ = narrowed(wide.roots());
  inv_roots_ = narrowed(wide.inverse_roots());
  roots_shoup_ = shoup_constants(roots_, q);
  inv_roots_shoup_ = shoup_constants(inv_roots_, q);
  inv_n_ = static_cast<u32>(wide.inverse_n());
  inv_n_shoup_ = shoup(inv_n_, q);
}

void NttTable32::forward(u32* a) const {
  if (detail::cpu_has_avx2() && n_ >= detail::min_avx2_ring_degree32) {
    detail::forward_avx2(a, n_, roots_.data(), roots_shoup_.data(), q_);
  } else {
    forward_scalar(a);
  }
}

void NttTable32::forward_scalar(u32* a) const {
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
  const std::uint64_t m = detail::inverse_radix4_passes(a, n_, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q_);
  if (m == 2) detail::inverse_radix2_stage(a, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q_);
  for (std::uint64_t j = 0; j < n_; ++j) a[j] = mul_shoup(a[j], inv_n_, inv_n_shoup_, q_);
}

}  // namespace fhelium
