#include "fhelium/encoder.hpp"

#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"

namespace fhelium {
namespace {

void bit_reverse_permute(std::vector<std::complex<double>>& v) {
  const std::size_t n = v.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(v[i], v[j]);
  }
}

// Mixed-radix (Garner) digits of the residues of a level's primes.
void garner_digits(const Context& ctx, const u64* residues, int level, u64* digits) {
  const auto [first, count] = ctx.level_basis(level);
  for (int i = 0; i < count; ++i) {
    const auto qi_index = static_cast<std::size_t>(first + i);
    const Modulus& qi = ctx.q()[qi_index];
    u64 t = residues[i];
    for (int j = 0; j < i; ++j) {
      const u64 dj = reduce128(digits[j], qi);
      const auto qj_index = static_cast<std::size_t>(first + j);
      t = mul_shoup(sub_mod(t, dj, qi.value), ctx.garner_inverse()[qi_index][qj_index],
                    ctx.garner_inverse_shoup()[qi_index][qj_index], qi.value);
    }
    digits[i] = t;
  }
}

// True when the mixed-radix number a is greater than b (same radices, `count` digits).
bool digits_greater(const u64* a, const u64* b, int count) {
  for (int i = count - 1; i >= 0; --i) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return false;
}

}  // namespace

Encoder::Encoder(std::shared_ptr<const Context> context) : context_(std::move(context)) {
  const std::uint64_t m = 2 * context_->ring_degree();
  roots_.resize(m + 1);
  for (std::uint64_t k = 0; k <= m; ++k) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m);
    roots_[k] = {std::cos(angle), std::sin(angle)};
  }
  rotation_group_.resize(context_->ring_degree() / 2);
  std::uint64_t power = 1;
  for (auto& r : rotation_group_) {
    r = power;
    power = (power * 5) & (m - 1);
  }
}

u64 Encoder::round_to_residue(double value, const Modulus& q) {
  if (!std::isfinite(value)) {
    throw InvalidArgumentError("cannot encode a non-finite value (" + std::to_string(value) + ")");
  }
  const double r = std::round(value);
  const bool negative = r < 0;
  const double magnitude = std::fabs(r);
  u64 residue;
  if (magnitude < 0x1.0p63) {
    residue = static_cast<u64>(magnitude) % q.value;
  } else {
    // magnitude = mantissa * 2^exponent exactly, with a 53-bit integer mantissa.
    int exponent = 0;
    const double fraction = std::frexp(magnitude, &exponent);
    const auto mantissa = static_cast<u64>(std::ldexp(fraction, 53));
    residue = mul_mod(mantissa % q.value, pow_mod(2, static_cast<u64>(exponent - 53), q), q);
  }
  return negative ? neg_mod(residue, q.value) : residue;
}

void Encoder::special_inverse_fft(std::vector<std::complex<double>>& v) const {
  const std::size_t n = v.size();
  const std::size_t m = 2 * context_->ring_degree();
  for (std::size_t len = n; len >= 2; len >>= 1) {
    const std::size_t half = len >> 1;
    const std::size_t quad = len << 2;
    const std::size_t gap = m / quad;
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t j = 0; j < half; ++j) {
        const std::complex<double> u = v[i + j] + v[i + j + half];
        const std::complex<double> w = v[i + j] - v[i + j + half];
        const std::size_t index = (quad - (rotation_group_[j] & (quad - 1))) * gap;
        v[i + j] = u;
        v[i + j + half] = w * roots_[index];
      }
    }
  }
  for (auto& x : v) x /= static_cast<double>(n);
  bit_reverse_permute(v);
}

void Encoder::special_fft(std::vector<std::complex<double>>& v) const {
  const std::size_t n = v.size();
  const std::size_t m = 2 * context_->ring_degree();
  bit_reverse_permute(v);
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const std::size_t half = len >> 1;
    const std::size_t quad = len << 2;
    const std::size_t gap = m / quad;
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t j = 0; j < half; ++j) {
        const std::complex<double> u = v[i + j];
        const std::complex<double> w = v[i + j + half] * roots_[(rotation_group_[j] & (quad - 1)) * gap];
        v[i + j] = u + w;
        v[i + j + half] = u - w;
      }
    }
  }
}

HostValue Encoder::encode(std::span<const std::complex<double>> values, int level, double scale,
                          Domain domain) const {
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  if (values.size() > n / 2) {
    throw InvalidArgumentError("message of " + std::to_string(values.size()) +
                               " values is longer than the slot count " + std::to_string(n / 2));
  }
  if (level < 0 || level > ctx.max_level()) {
    throw InvalidArgumentError("level " + std::to_string(level) + " is out of range: expected 0.." +
                               std::to_string(ctx.max_level()));
  }
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw InvalidArgumentError("scale " + std::to_string(scale) + " is invalid: expected a finite value > 0");
  }
  const std::size_t slots = std::bit_ceil(std::max<std::size_t>(values.size(), 1));
  std::vector<std::complex<double>> v(values.begin(), values.end());
  v.resize(slots);
  special_inverse_fft(v);

  const std::size_t gap = n / (2 * slots);
  std::vector<double> coefficients(n, 0.0);
  for (std::size_t i = 0; i < slots; ++i) {
    coefficients[i * gap] = v[i].real() * scale;
    coefficients[n / 2 + i * gap] = v[i].imag() * scale;
  }

  HostValue pt;
  pt.state = {ctx.id(), ctx.word_size(), level, scale, Domain::coefficient, Basis::Q, 1};
  pt.data.assign(pt.state.words(ctx), 0);
  const LevelBasis basis = ctx.level_basis(level);
  for (int limb = 0; limb < basis.count; ++limb) {
    const Modulus& q = ctx.level_modulus(level, limb);
    u64* out = pt.limb(ctx, 0, limb);
    for (std::size_t k = 0; k < n; ++k) {
      out[k] = coefficients[k] == 0.0 ? 0 : round_to_residue(coefficients[k], q);
    }
  }
  if (domain == Domain::ntt) {
    ntt_forward_limbs(ctx, pt.data.data(), basis.count, basis.first);
    pt.state.domain = Domain::ntt;
  }
  return pt;
}

HostValue Encoder::encode(std::span<const double> values, int level, double scale, Domain domain) const {
  std::vector<std::complex<double>> complex_values(values.begin(), values.end());
  return encode(complex_values, level, scale, domain);
}

HostValue Encoder::encode_constant(double value, int level, double scale, Domain domain) const {
  const std::complex<double> one[1] = {value};
  return encode(one, level, scale, domain);
}

std::vector<std::complex<double>> Encoder::decode(const HostValue& plaintext) const {
  return decode(plaintext, context_->ring_degree() / 2);
}

std::vector<std::complex<double>> Encoder::decode(const HostValue& plaintext, std::size_t slots) const {
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  const ValueState& st = plaintext.state;
  if (st.context_id != ctx.id() || st.components != 1 || st.basis != Basis::Q || st.level < 0 ||
      st.level > ctx.max_level() || plaintext.data.size() != st.words(ctx)) {
    throw StateError("decode expects a one-component Q-basis plaintext of context " + std::to_string(ctx.id()) +
                     " at level 0.." + std::to_string(ctx.max_level()) + " with its residues, got " + st.describe());
  }
  if (slots == 0 || slots > n / 2 || !std::has_single_bit(slots)) {
    throw InvalidArgumentError("slot count " + std::to_string(slots) + " is invalid: expected a power of two <= " +
                               std::to_string(n / 2));
  }
  HostValue pt = plaintext;
  const int level = st.level;
  const LevelBasis basis = ctx.level_basis(level);
  if (st.domain == Domain::ntt) ntt_inverse_limbs(ctx, pt.data.data(), basis.count, basis.first);

  // Exact centered CRT: compare mixed-radix digits against (Q - 1) / 2.
  const auto limbs = static_cast<std::size_t>(basis.count);
  std::vector<u64> half_residues(limbs), half_digits(limbs), residues(limbs), digits(limbs);
  std::vector<long double> radix(limbs);
  long double product = 1.0L;
  for (std::size_t i = 0; i < limbs; ++i) {
    const u64 qi = ctx.level_modulus(level, static_cast<int>(i)).value;
    half_residues[i] = (qi - 1) / 2;
    radix[i] = product;
    product *= static_cast<long double>(qi);
  }
  garner_digits(ctx, half_residues.data(), level, half_digits.data());

  std::vector<double> coefficients(n);
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < limbs; ++i) residues[i] = pt.data[i * n + k];
    garner_digits(ctx, residues.data(), level, digits.data());
    long double sign = 1.0L;
    if (digits_greater(digits.data(), half_digits.data(), basis.count)) {
      for (std::size_t i = 0; i < limbs; ++i) {
        residues[i] = neg_mod(residues[i], ctx.level_modulus(level, static_cast<int>(i)).value);
      }
      garner_digits(ctx, residues.data(), level, digits.data());
      sign = -1.0L;
    }
    long double value = 0.0L;
    for (std::size_t i = limbs; i-- > 0;) value += static_cast<long double>(digits[i]) * radix[i];
    coefficients[k] = static_cast<double>(sign * value / static_cast<long double>(st.scale));
  }

  const std::size_t gap = n / (2 * slots);
  std::vector<std::complex<double>> v(slots);
  for (std::size_t i = 0; i < slots; ++i) v[i] = {coefficients[i * gap], coefficients[n / 2 + i * gap]};
  special_fft(v);
  return v;
}

std::vector<std::complex<double>> rotate_slots(std::span<const std::complex<double>> slots, long step) {
  const auto n = static_cast<long>(slots.size());
  std::vector<std::complex<double>> out(slots.size());
  if (n == 0) return out;
  const long shift = (step % n + n) % n;
  for (long i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = slots[static_cast<std::size_t>((i + shift) % n)];
  return out;
}

}  // namespace fhelium
