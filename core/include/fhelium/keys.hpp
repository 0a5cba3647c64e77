// Secret, public and key-switching keys, generated on the host.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/random.hpp"
#include "fhelium/value.hpp"

namespace fhelium {

// Written to a file only by save_secret_key_unprotected and
// save_secret_key_file_unprotected (fhelium/serialization.hpp).
class SecretKey {
 public:
  SecretKey(std::uint64_t context_id, std::vector<std::int8_t> coefficients, std::vector<u64> ntt_qp,
            std::vector<u64> ntt_qp_shoup);
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;
  SecretKey(SecretKey&&) noexcept = default;
  ~SecretKey();  // wipes the coefficients

  std::uint64_t context_id() const { return context_id_; }
  const std::vector<std::int8_t>& coefficients() const { return coefficients_; }
  // s in NTT form for every key limb (Q then P primes), limb-major.
  const std::vector<u64>& ntt_qp() const { return ntt_qp_; }
  // Shoup constants of ntt_qp, for fast multiplication by s.
  const std::vector<u64>& ntt_qp_shoup() const { return ntt_qp_shoup_; }

 private:
  std::uint64_t context_id_;
  std::vector<std::int8_t> coefficients_;
  std::vector<u64> ntt_qp_;
  std::vector<u64> ntt_qp_shoup_;
};

// (b, a) = (-a s + e, a) over QP at the top level (every key limb), NTT
// domain: encryption works in QP and divides by P, so a fresh ciphertext
// carries the rounding of that division instead of the encryption noise.
struct PublicKey {
  HostValue value;
  // The seed `a` was expanded from (expand_uniform, limbs 0..key_limbs-1);
  // not secret. Empty for a key whose `a` has no seed.
  std::optional<Seed> a_seed;
};

// A hybrid key-switching key from s' to s: for each digit j,
// (b_j, a_j) over QP with b_j = -a_j s + e_j + [P]_{q_i} s' on the primes of
// digit j. Layout: digits x 2 x key_limbs x N, NTT domain.
struct HostSwitchKey {
  std::uint64_t context_id = 0;
  int digits = 0;
  std::uint32_t galois_element = 0;  // 0 for relinearization
  std::vector<u64> data;
  // The seed every a_j was expanded from (expand_uniform over the digits in
  // order, limbs 0..key_limbs-1 each); not secret. Empty when `a` has no seed.
  std::optional<Seed> a_seed;
};

// The secret with these coefficients (ternary, or small Gaussian), with its
// NTT forms on every key limb of `context`.
SecretKey make_secret_key(const Context& context, std::vector<std::int8_t> coefficients);

// Fills the uniform half `a` of a seeded object from Csprng(seed): the blocks
// in order, within each block key limbs 0..limbs-1 in order, each limb N words
// uniform below its prime (Csprng::fill_uniform). A block is limbs x N words,
// contiguous. Key generation, symmetric encryption and the loaders all call
// it, so a stored seed gives back the same residues bit for bit.
void expand_uniform(const Context& context, const Seed& seed, int limbs, std::span<u64* const> blocks,
                    int first_key_limb = 0);

class KeyGenerator {
 public:
  KeyGenerator(std::shared_ptr<const Context> context, Csprng& rng);

  SecretKey secret_key();
  PublicKey public_key(const SecretKey& sk);
  HostSwitchKey relinearization_key(const SecretKey& sk);
  HostSwitchKey galois_key(const SecretKey& sk, std::uint32_t galois_element);
  // A key that turns a ciphertext under `from` into one under `to` (both of
  // this context): Engine::key_switch. Its security is that of `to`.
  HostSwitchKey switching_key(const SecretKey& from, const SecretKey& to);

 private:
  // Switching key for the source secret s' given in NTT form on every key limb.
  HostSwitchKey switch_key(const SecretKey& sk, std::span<const u64> source_ntt_qp);
  void check_context(const SecretKey& sk) const;

  std::shared_ptr<const Context> context_;
  Csprng& rng_;
};

// A key-switching key resident on a backend.
struct SwitchKey {
  std::uint64_t context_id = 0;
  int digits = 0;
  std::shared_ptr<Buffer> buffer;
};
struct RelinKey : SwitchKey {};

// Rotation and conjugation keys resident on a backend, by Galois element.
struct GaloisKeys {
  std::uint64_t context_id = 0;
  std::map<std::uint32_t, SwitchKey> keys;
  bool contains(std::uint32_t galois_element) const { return keys.count(galois_element) != 0; }
};

}  // namespace fhelium
