#include "fhelium/backend/rns.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "fhelium/backend/limb_kernels.hpp"
#include "fhelium/error.hpp"
#include "ntt_kernels.hpp"
#include "rns_narrow.hpp"

namespace fhelium {

namespace {

constexpr std::size_t max_from_primes = detail::narrow_max_from_primes;  // keeps the 128-bit sums exact

bool all_narrow(const std::vector<Modulus>& primes) {
  for (const Modulus& m : primes) {
    if (m.value >= NarrowModulus::limit) return false;
  }
  return true;
}

}  // namespace

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
  if (all_narrow(from_) && all_narrow(to_)) {
    Narrow t;
    for (const Modulus& m : from_) t.from.emplace_back(m.value);
    for (const Modulus& m : to_) t.to.emplace_back(m.value);
    for (std::size_t i = 0; i < na; ++i) {
      t.hat_inverse.push_back(static_cast<u32>(hat_inv_[i]));
      t.hat_inverse_shoup.push_back(shoup(t.hat_inverse.back(), t.from[i].value));
    }
    for (u64 h : hat_mod_to_) t.hat_mod_to.push_back(static_cast<u32>(h));
    narrow_ = std::move(t);
  }
}

template <class W>
void BasisConverter::convert_narrow(const W* in, W* out, std::size_t n, std::size_t begin, std::size_t end,
                                    std::size_t first_target, std::size_t end_target, bool vector) const {
  if (!narrow_) {
    throw InvalidArgumentError("basis conversion in 32-bit words: a prime of the bases is not below 2^31");
  }
  const Narrow& t = *narrow_;
  const detail::NarrowConversion c{t.from.data(),
                                   t.from.size(),
                                   t.to.data(),
                                   t.hat_inverse.data(),
                                   t.hat_inverse_shoup.data(),
                                   t.hat_mod_to.data(),
                                   inv_double_.data(),
                                   overflow_mod_to_.data()};
  if (vector && detail::cpu_has_avx2()) {
    detail::convert_narrow_avx2(c, in, out, n, begin, end, first_target, end_target);
  } else {
    detail::convert_narrow_scalar(c, in, out, n, begin, end, first_target, end_target);
  }
}

void BasisConverter::convert_scalar(const u64* in, u64* out, std::size_t n, std::size_t begin, std::size_t end) const {
  if (!narrow_) {
    convert(in, out, n, begin, end);
    return;
  }
  convert_narrow(in, out, n, begin, end, 0, to_.size(), false);
}

void BasisConverter::convert(const u32* in, u32* out, std::size_t n, std::size_t begin, std::size_t end) const {
  convert_narrow(in, out, n, begin, end, 0, to_.size(), true);
}

void BasisConverter::convert_one(const u32* in, u32* out, std::size_t n, std::size_t target, std::size_t begin,
                                 std::size_t end) const {
  convert_narrow(in, out, n, begin, end, target, target + 1, true);
}

void BasisConverter::convert(const u64* in, u64* out, std::size_t n, std::size_t begin, std::size_t end) const {
  const std::size_t na = from_.size();
  const std::size_t nb = to_.size();
  if (na == 1) {
    for (std::size_t j = 0; j < nb; ++j) convert_one(in, out + j * n, n, j, begin, end);
    return;
  }
  if (narrow_) {
    convert_narrow(in, out, n, begin, end, 0, nb, true);
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
  if (narrow_) {
    convert_narrow(in, out, n, begin, end, target, target + 1, true);
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

namespace detail {

// The overflow count sums the same doubles in the same order as
// scaled_residues; a sum of products of residues below 2^31 is folded every
// third product, so it stays below 2^64.
namespace {

template <class W>
void convert_blocks(const NarrowConversion& c, const W* in, W* out, std::size_t n, std::size_t begin, std::size_t end,
                    std::size_t first_target, std::size_t end_target) {
  const std::size_t na = c.from_count;
  u32 y[narrow_max_from_primes][narrow_block];
  double overflow[narrow_block];
  u32 v[narrow_block];
  for (std::size_t k0 = begin; k0 < end; k0 += narrow_block) {
    const std::size_t len = std::min(narrow_block, end - k0);
    std::fill_n(overflow, len, 0.0);
    for (std::size_t i = 0; i < na; ++i) {
      const W* x = in + i * n + k0;
      for (std::size_t k = 0; k < len; ++k) {
        const u32 r = mul_shoup(static_cast<u32>(x[k]), c.hat_inverse[i], c.hat_inverse_shoup[i], c.from[i].value);
        y[i][k] = r;
        overflow[k] += static_cast<double>(r) * c.inverse_as_double[i];
      }
    }
    for (std::size_t k = 0; k < len; ++k) v[k] = static_cast<u32>(overflow[k] + 0.5);
    for (std::size_t j = first_target; j < end_target; ++j) {
      const NarrowModulus& b = c.to[j];
      const u64* over = c.overflow_mod_to + j * (na + 1);
      W* o = out + (j - first_target) * n + k0;
      for (std::size_t k = 0; k < len; ++k) {
        u64 acc = 0;
        for (std::size_t i = 0; i < na; ++i) {
          acc += u64{y[i][k]} * c.hat_mod_to[j * na + i];
          if (i % 3 == 2 && i + 1 < na) acc = reduce_narrow(acc, b);
        }
        o[k] = static_cast<W>(sub_mod(u64{reduce_narrow(acc, b)}, over[v[k]], b.value));
      }
    }
  }
}

}  // namespace

void convert_narrow_scalar(const NarrowConversion& c, const u64* in, u64* out, std::size_t n, std::size_t begin,
                           std::size_t end, std::size_t first_target, std::size_t end_target) {
  convert_blocks(c, in, out, n, begin, end, first_target, end_target);
}

void convert_narrow_scalar(const NarrowConversion& c, const u32* in, u32* out, std::size_t n, std::size_t begin,
                           std::size_t end, std::size_t first_target, std::size_t end_target) {
  convert_blocks(c, in, out, n, begin, end, first_target, end_target);
}

}  // namespace detail
}  // namespace fhelium
