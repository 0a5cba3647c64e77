#include "fhelium/context.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"
#include "fhelium/security.hpp"

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
  const auto q_primes = generate_ntt_primes(params.q_bits, params.ring_degree());
  const auto p_primes =
      generate_ntt_primes(params.p_bits, params.ring_degree(), std::set<u64>(q_primes.begin(), q_primes.end()));
  return std::shared_ptr<const Context>(new Context(params, q_primes, p_primes));
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
      if (p >= (u64{1} << 62) || !is_prime(p) || (p - 1) % (2 * params.ring_degree()) != 0 || !seen.insert(p).second) {
        throw ParameterError("prime " + std::to_string(p) + " is not a distinct NTT-friendly prime below 2^62 for ring degree " +
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

  const int alpha = digit_size();
  for (int level = 0; level <= max_level(); ++level) {
    const int active = level + 1;
    const int digits = (active + alpha - 1) / alpha;
    std::vector<BasisConverter> mod_up;
    for (int j = 0; j < digits; ++j) {
      const int begin = j * alpha;
      const int end = std::min(active, begin + alpha);
      std::vector<Modulus> from(q_.begin() + begin, q_.begin() + end);
      std::vector<Modulus> to(q_.begin(), q_.begin() + begin);
      to.insert(to.end(), q_.begin() + end, q_.begin() + active);
      to.insert(to.end(), p_.begin(), p_.end());
      mod_up.emplace_back(std::move(from), std::move(to));
    }
    std::vector<Modulus> q_level(q_.begin(), q_.begin() + active);
    KeySwitchLevel ks{digits, std::move(mod_up), BasisConverter(p_, q_level), {}, {}};
    for (const Modulus& qi : q_level) {
      u64 p_mod = 1;
      for (const Modulus& pk : p_) p_mod = mul_mod(p_mod, pk.value % qi.value, qi);
      const u64 inv = inv_mod(p_mod, qi);
      ks.p_inverse.push_back(inv);
      ks.p_inverse_shoup.push_back(shoup(inv, qi.value));
    }
    key_switch_.push_back(std::move(ks));

    RescaleLevel rs;
    if (level > 0) {
      const u64 last = q_[static_cast<std::size_t>(level)].value;
      for (int i = 0; i < level; ++i) {
        const Modulus& qi = q_[static_cast<std::size_t>(i)];
        const u64 inv = inv_mod(last % qi.value, qi);
        rs.last_inverse.push_back(inv);
        rs.last_inverse_shoup.push_back(shoup(inv, qi.value));
        rs.half_last.push_back((last >> 1) % qi.value);
      }
    }
    rescale_.push_back(std::move(rs));
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
