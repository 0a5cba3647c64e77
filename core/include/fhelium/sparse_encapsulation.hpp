// The sparse-secret encapsulation's keys (OpenFHE's SPARSE_ENCAPSULATED):
// for a context with a dense secret, an ephemeral secret s' of Hamming
// weight h (32: K = 16) used only inside bootstrapping. Before ModRaise the
// level-0 ciphertext is switched from the dense secret to s', after it back.
//
// The key to s' is an RLWE sample whose secret is s', so it must sit at a
// modulus small enough for h = 32: it lives in the low context, whose primes
// are q_0 and the first special prime only (about 121 bits at N = 2^16, as
// OpenFHE keeps it at q_0 times one auxiliary prime); the key back is
// protected by the dense secret over the whole QP, as every evaluation key
// is. The ephemeral secret is not kept.
#pragma once

#include <memory>

#include "fhelium/context.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/random.hpp"

namespace fhelium {

// The context of the key to the sparse secret: `context`'s parameters with
// level 0's primes and as many special primes as its only ones (q_0 p_0;
// in the 32-bit family q_0 q_1 p_0 p_1, a chain of level 0 only).
// Deterministic, so a loader rebuilds it.
std::shared_ptr<const Context> encapsulation_low_context(const Context& context);

struct SparseEncapsulationKeys {
  std::shared_ptr<const Context> low_context;
  int hamming_weight = 32;
  HostSwitchKey dense_to_sparse;  // in low_context
  HostSwitchKey sparse_to_dense;  // in the main context
  // InvalidArgumentError for a context whose secret is already sparse or
  // that has no special prime.
  static SparseEncapsulationKeys generate(std::shared_ptr<const Context> context, const SecretKey& secret, Csprng& rng,
                                          int hamming_weight = 32);
};

}  // namespace fhelium
