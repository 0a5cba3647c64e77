#include "fhelium/context.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"
#include "fhelium/security.hpp"
#include "rational_chain.hpp"

namespace fhelium {
namespace {

std::atomic<std::uint64_t> next_context_id{1};

std::vector<Modulus> to_moduli(const std::vector<u64>& primes) {
  return {primes.begin(), primes.end()};
}

double log2_product(const std::vector<Modulus>& moduli) {
  double sum = 0;
  for (const auto& m : moduli) sum += std::log2(static_cast<double>(m.value));
  return sum;
}

}  // namespace

std::shared_ptr<const Context> Context::create(const CkksParameters& params) {
  params.validate();
  const auto q_primes = params.word_size == WordSize::bits64
                            ? generate_ntt_primes(params.q_bits, params.ring_degree())
                            : rational_chain::choose_primes(params.ring_degree(), params.scale,
                                                            rational_chain::mains(params), params.wide_levels, {});
  const auto p_primes =
      generate_ntt_primes(params.p_bits, params.ring_degree(), std::set<u64>(q_primes.begin(), q_primes.end()));
  CkksParameters chosen = params;
  chosen.q_bits.clear();
  for (u64 q : q_primes) chosen.q_bits.push_back(static_cast<int>(std::bit_width(q)));
  return std::shared_ptr<const Context>(new Context(chosen, q_primes, p_primes));
}

std::shared_ptr<const Context> Context::create_with_primes(CkksParameters params, const std::vector<u64>& q_primes,
                                                           const std::vector<u64>& p_primes) {
  const auto bits = [](const std::vector<u64>& primes) {
    std::vector<int> out;
    for (u64 p : primes) out.push_back(static_cast<int>(std::bit_width(p)));
    return out;
  };
  params.q_bits = bits(q_primes);
  params.p_bits = bits(p_primes);
  params.validate();
  std::set<u64> seen;
  for (const auto* list : {&q_primes, &p_primes}) {
    for (u64 p : *list) {
      if (p >= (u64{1} << (params.word_size == WordSize::bits64 ? 62 : 31)) || !is_prime(p) ||
          (p - 1) % (2 * params.ring_degree()) != 0 || !seen.insert(p).second) {
        throw ParameterError("prime " + std::to_string(p) + " is not a distinct NTT-friendly prime below 2^" +
                             (params.word_size == WordSize::bits64 ? "62" : "31") + " for ring degree " +
                             std::to_string(params.ring_degree()));
      }
    }
  }
  return std::shared_ptr<const Context>(new Context(params, q_primes, p_primes));
}

Context::Context(const CkksParameters& params, const std::vector<u64>& q_primes, const std::vector<u64>& p_primes)
    : params_(params), id_(next_context_id++), n_(params.ring_degree()) {
  q_ = to_moduli(q_primes);
  p_ = to_moduli(p_primes);
  if (!params.allow_insecure) {
    // The table's rows are for uniform secrets; a sparse one is weaker at the
    // same modulus (hybrid attacks), so it is outside the table.
    if (params.hamming_weight != 0) {
      throw SecurityError("a sparse secret (hamming_weight " + std::to_string(params.hamming_weight) +
                          ") is outside the 2025 security table, which covers uniform secrets only: expected "
                          "hamming_weight 0, or allow_insecure = true to opt out");
    }
    check_security(params.secret, params.security_bits, n_, log_qp());
  }

  for (int limb = 0; limb < key_limbs(); ++limb) ntt_.emplace_back(n_, key_modulus(limb));

  if (params.word_size == WordSize::bits64) {
    for (int level = 0; level < q_count(); ++level) levels_.push_back({0, level + 1});
  } else {
    levels_ = rational_chain::levels(rational_chain::mains(params), params.wide_levels);
  }

  const int alpha = digit_size();
  for (int level = 0; level <= max_level(); ++level) {
    const LevelBasis basis = level_basis(level);
    const auto window = [&](int begin, int end) {
      return std::vector<Modulus>(q_.begin() + basis.first + begin, q_.begin() + basis.first + end);
    };
    const int first_digit = basis.first / alpha;
    const int digits = (basis.first + basis.count - 1) / alpha - first_digit + 1;
    std::vector<BasisConverter> mod_up;
    for (int j = 0; j < digits; ++j) {
      const auto [begin, end] = digit_limbs(level, j);
      std::vector<Modulus> to = window(0, begin);
      for (const Modulus& m : window(end, basis.count)) to.push_back(m);
      to.insert(to.end(), p_.begin(), p_.end());
      mod_up.emplace_back(window(begin, end), std::move(to));
    }
    const std::vector<Modulus> q_level = window(0, basis.count);
    KeySwitchLevel ks{digits, first_digit, std::move(mod_up), BasisConverter(p_, q_level), {}, {}};
    for (const Modulus& qi : q_level) {
      u64 p_mod = 1;
      for (const Modulus& pk : p_) p_mod = mul_mod(p_mod, pk.value % qi.value, qi);
      const u64 inv = inv_mod(p_mod, qi);
      ks.p_inverse.push_back(inv);
      ks.p_inverse_shoup.push_back(shoup(inv, qi.value));
    }
    key_switch_.push_back(std::move(ks));
    RescaleLevel rescale = level > 0 ? rescale_tables(level) : RescaleLevel{};
    if (level == 0) rescale.divisor = static_cast<double>(q_level.front().value);
    rescale_.push_back(std::move(rescale));
  }

  garner_inv_.resize(q_.size());
  garner_inv_shoup_.resize(q_.size());
  for (std::size_t i = 0; i < q_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const u64 inv = inv_mod(q_[j].value % q_[i].value, q_[i]);
      garner_inv_[i].push_back(inv);
      garner_inv_shoup_[i].push_back(shoup(inv, q_[i].value));
    }
  }
}

RescaleLevel Context::rescale_tables(int level) const {
  const LevelBasis from = level_basis(level);
  const LevelBasis to = level_basis(level - 1);
  const auto inside = [](const LevelBasis& b, int key) { return key >= b.first && key < b.first + b.count; };
  RescaleLevel rs;
  std::vector<Modulus> dropped;
  std::vector<Modulus> out;
  long double divisor = 1.0L;
  for (int i = 0; i < from.count; ++i) {
    if (!inside(to, from.first + i)) {
      rs.dropped.push_back(i);
      dropped.push_back(q_[static_cast<std::size_t>(from.first + i)]);
      divisor *= static_cast<long double>(dropped.back().value);
    }
  }
  std::vector<u64> added;
  for (int i = 0; i < to.count; ++i) {
    const int key = to.first + i;
    rs.source.push_back(inside(from, key) ? key - from.first : -1);
    out.push_back(q_[static_cast<std::size_t>(key)]);
    if (!inside(from, key)) {
      added.push_back(out.back().value);
      divisor /= static_cast<long double>(out.back().value);
    }
  }
  rs.divisor = static_cast<double>(divisor);
  const auto product_mod = [&](const Modulus& m) {
    u64 r = 1;
    for (u64 a : added) r = mul_mod(r, a % m.value, m);
    return r;
  };
  for (const Modulus& d : dropped) rs.added_mod_dropped.push_back(product_mod(d));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Modulus& t = out[i];
    rs.added_mod_out.push_back(rs.source[i] < 0 ? 0 : product_mod(t));
    u64 d_mod = 1;
    for (const Modulus& d : dropped) d_mod = mul_mod(d_mod, d.value % t.value, t);
    const u64 inv = inv_mod(d_mod, t);
    rs.dropped_inverse.push_back(inv);
    rs.dropped_inverse_shoup.push_back(shoup(inv, t.value));
  }
  rs.from_dropped.emplace(dropped, out);
  // One prime per level: the tables of the backends' fast path.
  if (added.empty() && rs.dropped == std::vector<int>{from.count - 1}) {
    const u64 last = dropped.front().value;
    for (const Modulus& qi : out) {
      const u64 inv = inv_mod(last % qi.value, qi);
      rs.last_inverse.push_back(inv);
      rs.last_inverse_shoup.push_back(shoup(inv, qi.value));
      rs.half_last.push_back((last >> 1) % qi.value);
    }
  }
  return rs;
}

int Context::level_of_limbs(int limbs) const {
  for (int level = 0; level <= max_level(); ++level) {
    if (level_basis(level).count == limbs) return level;
  }
  return -1;
}

std::pair<int, int> Context::digit_limbs(int level, int j) const {
  const LevelBasis basis = level_basis(level);
  const int alpha = digit_size();
  const int digit = basis.first / alpha + j;
  return {std::max(digit * alpha, basis.first) - basis.first,
          std::min((digit + 1) * alpha, basis.first + basis.count) - basis.first};
}

bool Context::nested(int from, int to) const {
  const LevelBasis a = level_basis(from);
  const LevelBasis b = level_basis(to);
  return b.first >= a.first && b.first + b.count <= a.first + a.count;
}

double Context::nominal_scale(int level) const {
  double scale = params_.scale;
  for (int l = 1; l <= level; ++l) scale = std::sqrt(scale * rescale_divisor(l));
  return scale;
}

double Context::log_q() const { return log2_product(q_); }
double Context::log_qp() const { return log2_product(q_) + log2_product(p_); }

const Modulus& Context::key_modulus(int limb) const {
  const auto l = static_cast<std::size_t>(limb);
  return l < q_.size() ? q_[l] : p_.at(l - q_.size());
}

std::uint32_t Context::galois_element(long step) const {
  const long slots = static_cast<long>(n_ / 2);
  long normalized = step % slots;
  if (normalized < 0) normalized += slots;
  // 5^normalized mod 2N by square-and-multiply (2N is a power of two: mask).
  const u64 mask = 2 * n_ - 1;
  u64 element = 1;
  u64 base = 5;
  for (auto e = static_cast<u64>(normalized); e != 0; e >>= 1) {
    if (e & 1) element = (element * base) & mask;
    base = (base * base) & mask;
  }
  return static_cast<std::uint32_t>(element);
}

std::vector<std::uint32_t> Context::ntt_automorphism_permutation(std::uint32_t galois_element) const {
  const int log_n = static_cast<int>(std::log2(static_cast<double>(n_)));
  const u64 mask = 2 * n_ - 1;
  std::vector<std::uint32_t> perm(n_);
  for (std::uint64_t i = 0; i < n_; ++i) {
    const u64 exponent = 2 * bit_reverse(static_cast<std::uint32_t>(i), log_n) + 1;
    const u64 image = (exponent * galois_element) & mask;
    perm[i] = bit_reverse(static_cast<std::uint32_t>((image - 1) >> 1), log_n);
  }
  return perm;
}

}  // namespace fhelium
