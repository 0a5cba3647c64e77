// Encryption and decryption on the host (randomness is drawn here, so every
// backend sees the same residues).
#pragma once

#include <memory>

#include "fhelium/context.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/random.hpp"
#include "fhelium/value.hpp"

namespace fhelium {

// A fresh symmetric ciphertext and the seed its c1 was expanded from
// (expand_uniform over limbs 0..level): saved, it stores the seed instead of c1.
struct SeededCiphertext {
  HostValue value;
  Seed a_seed{};
};

class Encryptor {
 public:
  Encryptor(std::shared_ptr<const Context> context, Csprng& rng);

  // The plaintext's level and scale are kept; the ciphertext is in the NTT domain.
  HostValue encrypt(const HostValue& plaintext, const PublicKey& pk);
  // Returns encrypt_symmetric_seeded(...).value.
  HostValue encrypt_symmetric(const HostValue& plaintext, const SecretKey& sk);
  SeededCiphertext encrypt_symmetric_seeded(const HostValue& plaintext, const SecretKey& sk);

 private:
  HostValue prepare_plaintext(const HostValue& plaintext) const;
  std::shared_ptr<const Context> context_;
  Csprng& rng_;
};

class Decryptor {
 public:
  explicit Decryptor(std::shared_ptr<const Context> context);
  // c0 + c1 s (+ c2 s^2), in the ciphertext's domain.
  HostValue decrypt(const HostValue& ciphertext, const SecretKey& sk) const;

 private:
  std::shared_ptr<const Context> context_;
};

// Shared helpers for host polynomial arithmetic over the first `limbs` key limbs.
void ntt_forward_limbs(const Context& context, u64* data, int limbs, int first_key_limb = 0);
void ntt_inverse_limbs(const Context& context, u64* data, int limbs, int first_key_limb = 0);
// Signed small coefficients to residues on key limbs [first, first + limbs).
void small_to_residues(const Context& context, std::span<const std::int64_t> small, u64* out,
                       int limbs, int first_key_limb = 0);

}  // namespace fhelium
