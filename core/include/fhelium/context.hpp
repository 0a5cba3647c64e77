// A CKKS context: the primes and every table derived from them, built once
// and shared (immutable) by encoder, keys, engine and backends.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/backend/ntt.hpp"
#include "fhelium/backend/rns.hpp"
#include "fhelium/params.hpp"

namespace fhelium {

// The Q primes of one level: q_first .. q_(first + count - 1), a window of
// the context's primes (first = 0 with one prime per level).
struct LevelBasis {
  int first = 0;
  int count = 0;
};

// Tables for hybrid key switching at one level l. The key's digits are
// blocks of alpha consecutive Q primes; level l uses those its window meets,
// digit j of the level being the key's digit first_digit + j.
struct KeySwitchLevel {
  int digits = 0;
  int first_digit = 0;
  std::vector<BasisConverter> mod_up;     // digit j primes -> the other primes of Q_l and P
  BasisConverter mod_down;                // P -> Q_l
  std::vector<u64> p_inverse;             // [P^-1]_{q_i}, i <= l
  std::vector<u64> p_inverse_shoup;
};

// Tables for rescaling from level l to l - 1: x -> round(x A / D), D the
// product of the primes l drops and A of those l - 1 adds (A = 1 and D = q_l
// with one prime per level).
struct RescaleLevel {
  // D / A: the scale is divided by it. Level 0 (nothing to rescale): its
  // first prime, so that a constant sized for a rescale there asks for a
  // level the value does not have and is refused.
  double divisor = 1;
  // One prime per level: the dropped prime is q_l, the last limb.
  std::vector<u64> last_inverse;          // [q_l^-1]_{q_i}, i < l
  std::vector<u64> last_inverse_shoup;
  std::vector<u64> half_last;             // [floor(q_l / 2)]_{q_i}, i < l
  // Every context. For limb i of level l - 1: source[i], the limb of level l
  // with the same prime, or -1 for an added prime.
  std::vector<int> dropped;  // the limbs of level l that are divided out
  std::vector<int> source;
  std::vector<u64> added_mod_dropped;          // [A]_{d} for each dropped prime
  std::optional<BasisConverter> from_dropped;  // D's primes -> level l - 1's primes
  std::vector<u64> added_mod_out;              // [A]_{t} for each prime of level l - 1 (0 if added)
  std::vector<u64> dropped_inverse;            // [D^-1]_{t}
  std::vector<u64> dropped_inverse_shoup;
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
  int max_level() const { return static_cast<int>(levels_.size()) - 1; }
  // The Q primes of a level, and the level whose basis has `limbs` Q limbs
  // (limb counts decrease strictly with the level), or -1.
  const LevelBasis& level_basis(int level) const { return levels_.at(static_cast<std::size_t>(level)); }
  int level_of_limbs(int limbs) const;
  // The index into key_modulus of limb `limb` of a value at `level`: the
  // level's Q primes, then (basis QP) the P primes.
  int key_limb(int level, int limb) const {
    const LevelBasis& basis = level_basis(level);
    return limb < basis.count ? basis.first + limb : q_count() + (limb - basis.count);
  }
  // The prime of Q limb `limb` at `level`.
  const Modulus& level_modulus(int level, int limb) const {
    return q_[static_cast<std::size_t>(key_limb(level, limb))];
  }
  // Limbs [begin, end) of a level-l value that form digit j of level l.
  std::pair<int, int> digit_limbs(int level, int j) const;
  // Whether basis(to) is a part of basis(from): drop_to_level is then a copy of limbs.
  bool nested(int from, int to) const;
  int special_count() const { return static_cast<int>(p_.size()); }
  int digit_size() const { return special_count(); }  // alpha: Q primes per key-switching digit
  int key_digits() const { return key_switch(max_level()).digits; }  // dnum at the top level
  double log_q() const;
  double log_qp() const;

  // Key-basis layout: limbs 0..L are Q primes, L+1..L+K are P primes.
  int key_limbs() const { return q_count() + special_count(); }
  // Residues of one switching key: digits x 2 x key_limbs x N.
  std::size_t key_words() const {
    return static_cast<std::size_t>(key_digits()) * 2 * static_cast<std::size_t>(key_limbs()) * ring_degree();
  }
  int q_count() const { return static_cast<int>(q_.size()); }
  const std::vector<Modulus>& q() const { return q_; }
  const std::vector<Modulus>& p() const { return p_; }
  const Modulus& key_modulus(int limb) const;
  const NttTable& ntt(int key_limb) const { return ntt_[static_cast<std::size_t>(key_limb)]; }

  const KeySwitchLevel& key_switch(int level) const { return key_switch_.at(static_cast<std::size_t>(level)); }
  const RescaleLevel& rescale(int level) const { return rescale_.at(static_cast<std::size_t>(level)); }
  // The scale of a rescaled value is its scale divided by this (q_level with one prime per level).
  double rescale_divisor(int level) const { return rescale(level).divisor; }
  // The scale at which squaring and rescaling a level-l value gives the
  // nominal scale of level l - 1: the scale at level 0, and
  // sqrt(nominal(l - 1) x rescale_divisor(l)) above. Values encoded at these
  // scales keep them through a chain of products.
  double nominal_scale(int level) const;

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
  RescaleLevel rescale_tables(int level) const;

  CkksParameters params_;
  std::uint64_t id_;
  std::uint64_t n_;
  std::vector<Modulus> q_, p_;
  std::vector<LevelBasis> levels_;
  std::vector<NttTable> ntt_;
  std::vector<KeySwitchLevel> key_switch_;
  std::vector<RescaleLevel> rescale_;
  std::vector<std::vector<u64>> garner_inv_, garner_inv_shoup_;
};

}  // namespace fhelium
