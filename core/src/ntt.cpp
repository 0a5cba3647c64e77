#include "fhelium/backend/ntt.hpp"

#include <bit>
#include <string>

#include "fhelium/backend/ntt32.hpp"
#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"
#include "ntt32_kernels.hpp"
#include "ntt_kernels.hpp"

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
  if (q < NttTable32::max_modulus) {
    narrow_ = std::make_shared<const NttTable32>(*this);
    narrow_for_wide_words_ = n_ >= detail::min_avx2_ring_degree32 && detail::cpu_has_avx2();
  }
  if (!narrow_for_wide_words_ && detail::use_fma(q)) {
    roots_double_.assign(roots_.begin(), roots_.end());
    inv_roots_double_.assign(inv_roots_.begin(), inv_roots_.end());
  }
}

namespace {

// One limb through the 32-bit transform: narrowed into this thread's scratch
// and widened back.
template <class Transform>
void through_narrow(u64* a, std::uint64_t n, const Transform& transform) {
  thread_local std::vector<u32> scratch;
  scratch.resize(n);
  detail::narrow_words_avx2(a, scratch.data(), n);
  transform(scratch.data());
  detail::widen_words_avx2(scratch.data(), a, n);
}

}  // namespace

void NttTable::forward(u64* a) const {
  const u64 q = modulus_.value;
  if (narrow_for_wide_words_) {
    through_narrow(a, n_, [this](u32* x) { narrow_->forward(x); });
  } else if (!roots_double_.empty() && n_ >= 16) {
    detail::forward_fma(a, n_, roots_double_.data(), q);
  } else if (detail::use_avx2(q) && n_ >= 16) {
    detail::forward_avx2(a, n_, roots_.data(), roots_shoup_.data(), q);
  } else {
    forward_scalar(a);
  }
}

const NttTable32& NttTable::narrow_table() const {
  if (!narrow_) {
    throw InvalidArgumentError("NTT in 32-bit words: the prime " + std::to_string(modulus_.value) +
                               " is not below 2^31");
  }
  return *narrow_;
}

void NttTable::forward(u32* a) const { narrow_table().forward(a); }

void NttTable::inverse(u32* a) const { narrow_table().inverse(a); }

void NttTable::forward_scalar(u64* a) const {
  const u64 q = modulus_.value;
  std::uint64_t m = 1;
  if (log_n_ & 1) {
    detail::forward_radix2_stage(a, n_, 1, roots_.data(), roots_shoup_.data(), q);
    m = 2;
  }
  detail::forward_radix4_passes(a, n_, m, roots_.data(), roots_shoup_.data(), q);
  detail::reduce_from_4q(a, n_, q);
}

void NttTable::inverse(u64* a) const {
  const u64 q = modulus_.value;
  if (narrow_for_wide_words_) {
    through_narrow(a, n_, [this](u32* x) { narrow_->inverse(x); });
  } else if (!inv_roots_double_.empty() && n_ >= 16) {
    detail::inverse_fma(a, n_, inv_roots_double_.data(), q, inv_n_);
  } else if (detail::use_avx2(q) && n_ >= 16) {
    detail::inverse_avx2(a, n_, inv_roots_.data(), inv_roots_shoup_.data(), q, inv_n_, inv_n_shoup_);
  } else {
    inverse_scalar(a);
  }
}

void NttTable::inverse_scalar(u64* a) const {
  const u64 q = modulus_.value;
  const std::uint64_t m = detail::inverse_radix4_passes(a, n_, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q);
  if (m == 2) detail::inverse_radix2_stage(a, n_, 2, inv_roots_.data(), inv_roots_shoup_.data(), q);
  for (std::uint64_t j = 0; j < n_; ++j) a[j] = mul_shoup(a[j], inv_n_, inv_n_shoup_, q);
}

}  // namespace fhelium
