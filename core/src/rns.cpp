#include "fhelium/backend/rns.hpp"

#include <cstdint>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/backend/limb_kernels.hpp"

namespace fhelium {

namespace {
constexpr std::size_t max_from_primes = 60;  // keeps the 128-bit accumulation exact
}

BasisConverter::BasisConverter(std::vector<Modulus> from, std::vector<Modulus> to)
    : from_(std::move(from)), to_(std::move(to)) {
  if (from_.empty() || from_.size() > max_from_primes) {
    throw ParameterError("basis conversion from " + std::to_string(from_.size()) +
                         " primes: expected 1.." + std::to_string(max_from_primes));
  }
  const std::size_t na = from_.size();
  hat_inv_.resize(na);
  hat_inv_shoup_.resize(na);
  inv_double_.resize(na);
  for (std::size_t i = 0; i < na; ++i) {
    const Modulus& ai = from_[i];
    u64 hat = 1;
    for (std::size_t k = 0; k < na; ++k) {
      if (k != i) hat = mul_mod(hat, from_[k].value % ai.value, ai);
    }
    hat_inv_[i] = inv_mod(hat, ai);
    hat_inv_shoup_[i] = shoup(hat_inv_[i], ai.value);
    inv_double_[i] = 1.0 / static_cast<double>(ai.value);
  }
  hat_mod_to_.resize(to_.size() * na);
  prod_mod_to_.resize(to_.size());
  for (std::size_t j = 0; j < to_.size(); ++j) {
    const Modulus& b = to_[j];
    u64 product = 1;
    for (std::size_t i = 0; i < na; ++i) {
      u64 hat = 1;
      for (std::size_t k = 0; k < na; ++k) {
        if (k != i) hat = mul_mod(hat, from_[k].value % b.value, b);
      }
      hat_mod_to_[j * na + i] = hat;
      product = mul_mod(product, from_[i].value % b.value, b);
    }
    prod_mod_to_[j] = product;
  }
  // v * [A]_{b_j} for every overflow count v = 0..|A|.
  overflow_mod_to_.resize(to_.size() * (na + 1));
  for (std::size_t j = 0; j < to_.size(); ++j) {
    for (std::size_t v = 0; v <= na; ++v) overflow_mod_to_[j * (na + 1) + v] = mul_mod(v, prod_mod_to_[j], to_[j]);
  }
}

void BasisConverter::convert(const u64* in, u64* out, std::size_t n, std::size_t begin, std::size_t end) const {
  const std::size_t na = from_.size();
  const std::size_t nb = to_.size();
  if (na == 1) {
    for (std::size_t j = 0; j < nb; ++j) convert_one(in, out + j * n, n, j, begin, end);
    return;
  }
  u64 y[max_from_primes];
  for (std::size_t k = begin; k < end; ++k) {
    const u64 v = scaled_residues(in, n, k, y);
    for (std::size_t j = 0; j < nb; ++j) out[j * n + k] = combine(y, v, j);
  }
}

void BasisConverter::convert_one(const u64* in, u64* out, std::size_t n, std::size_t target, std::size_t begin,
                                 std::size_t end) const {
  if (from_.size() == 1) {
    // One prime: A / a_0 = 1 and the centered lift is exact in integers.
    lift_centered(in + begin, out + begin, end - begin, from_[0].value, to_[target], overflow_mod_to_[target * 2 + 1]);
    return;
  }
  u64 y[max_from_primes];
  for (std::size_t k = begin; k < end; ++k) out[k] = combine(y, scaled_residues(in, n, k, y), target);
}

u64 BasisConverter::scaled_residues(const u64* in, std::size_t n, std::size_t k, u64* y) const {
  double overflow = 0.0;
  for (std::size_t i = 0; i < from_.size(); ++i) {
    y[i] = mul_shoup(in[i * n + k], hat_inv_[i], hat_inv_shoup_[i], from_[i].value);
    overflow += static_cast<double>(y[i]) * inv_double_[i];
  }
  // Rounding (not flooring) gives the centered representative.
  return static_cast<u64>(overflow + 0.5);
}

u64 BasisConverter::combine(const u64* y, u64 v, std::size_t target) const {
  const std::size_t na = from_.size();
  const u64* hat = &hat_mod_to_[target * na];
  u128 acc = 0;
  for (std::size_t i = 0; i < na; ++i) acc += static_cast<u128>(y[i]) * hat[i];
  const Modulus& b = to_[target];
  return sub_mod(reduce128(acc, b), overflow_mod_to_[target * (na + 1) + v], b.value);
}

}  // namespace fhelium
