// A CKKS context: the primes and every table derived from them, built once
// and shared (immutable) by encoder, keys, engine and backends.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/backend/ntt.hpp"
#include "fhelium/params.hpp"
#include "fhelium/backend/rns.hpp"

namespace fhelium {

// Tables for hybrid key switching at one level l (active primes q_0..q_l).
struct KeySwitchLevel {
  int digits = 0;                         // ceil((l + 1) / alpha)
  std::vector<BasisConverter> mod_up;     // digit j primes -> the other primes of Q_l and P
  BasisConverter mod_down;                // P -> Q_l
  std::vector<u64> p_inverse;             // [P^-1]_{q_i}, i <= l
  std::vector<u64> p_inverse_shoup;
};

// Tables for rescaling from level l to l - 1.
struct RescaleLevel {
  std::vector<u64> last_inverse;          // [q_l^-1]_{q_i}, i < l
  std::vector<u64> last_inverse_shoup;
  std::vector<u64> half_last;             // [floor(q_l / 2)]_{q_i}, i < l
};

class Context {
 public:
  // Builds primes and tables; runs the security check unless
  // params.allow_insecure. Throws ParameterError / SecurityError.
  static std::shared_ptr<const Context> create(const CkksParameters& params);
  // Rebuilds a context from explicit primes (a plugin receiving a host's
  // context). Each prime must be NTT-friendly for the ring degree, below 2^62
  // and distinct; q_bits / p_bits are taken from the primes.
  static std::shared_ptr<const Context> create_with_primes(CkksParameters params, const std::vector<u64>& q_primes,
                                                           const std::vector<u64>& p_primes);

  const CkksParameters& params() const { return params_; }
  std::uint64_t id() const { return id_; }
  std::uint64_t ring_degree() const { return n_; }
  WordSize word_size() const { return params_.word_size; }
  int max_level() const { return static_cast<int>(q_.size()) - 1; }
  int special_count() const { return static_cast<int>(p_.size()); }
  int digit_size() const { return special_count(); }  // alpha: Q primes per key-switching digit
  int key_digits() const { return key_switch(max_level()).digits; }  // dnum at the top level
  double log_q() const;
  double log_qp() const;

  // Key-basis layout: limbs 0..L are Q primes, L+1..L+K are P primes.
  int key_limbs() const { return max_level() + 1 + special_count(); }
  const std::vector<Modulus>& q() const { return q_; }
  const std::vector<Modulus>& p() const { return p_; }
  const Modulus& key_modulus(int limb) const;
  const NttTable& ntt(int key_limb) const { return ntt_[static_cast<std::size_t>(key_limb)]; }

  const KeySwitchLevel& key_switch(int level) const { return key_switch_.at(static_cast<std::size_t>(level)); }
  const RescaleLevel& rescale(int level) const { return rescale_.at(static_cast<std::size_t>(level)); }

  // Galois element for a left rotation of the slots by `step` (any sign).
  std::uint32_t galois_element(long step) const;
  std::uint32_t conjugation_element() const { return static_cast<std::uint32_t>(2 * n_ - 1); }
  // out[i] = in[perm[i]] applies X -> X^g to a polynomial in NTT order.
  std::vector<std::uint32_t> ntt_automorphism_permutation(std::uint32_t galois_element) const;

  // [q_j^-1]_{q_i} (j < i) for mixed-radix (Garner) reconstruction at decode.
  const std::vector<std::vector<u64>>& garner_inverse() const { return garner_inv_; }
  const std::vector<std::vector<u64>>& garner_inverse_shoup() const { return garner_inv_shoup_; }

 private:
  Context(const CkksParameters& params, const std::vector<u64>& q_primes, const std::vector<u64>& p_primes);

  CkksParameters params_;
  std::uint64_t id_;
  std::uint64_t n_;
  std::vector<Modulus> q_, p_;
  std::vector<NttTable> ntt_;
  std::vector<KeySwitchLevel> key_switch_;
  std::vector<RescaleLevel> rescale_;
  std::vector<std::vector<u64>> garner_inv_, garner_inv_shoup_;
};

}  // namespace fhelium
