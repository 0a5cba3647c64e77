// CKKS parameters: ring degree, prime sizes, scale, special primes, security.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fhelium/security.hpp"

namespace fhelium {

// The word family: a property of the context and of every value's state.
// bits64: primes of up to 61 bits, one prime per level (a rescale drops the
// last one). bits32: primes of at most 31 bits in the rational chain (see
// CkksParameters::q_bits): a level holds several primes, and a rescale drops
// some and may add a terminal prime, dividing by their ratio (about the scale).
enum class WordSize : std::uint8_t { bits32 = 32, bits64 = 64 };

// Bytes a backend stores per residue: the 32-bit family packs its residues
// in 4-byte words (half the memory and traffic); the host holds both in
// 64-bit words (fhelium/backend/residue_transfer.hpp).
inline std::size_t stored_word_bytes(WordSize word_size) { return word_size == WordSize::bits32 ? 4 : 8; }

// log2 of the scale bootstrapping's CoeffToSlot and EvalMod work at, one
// level each: a 61-bit prime with 64-bit words (the widest they take; each
// bit is a bit less rounding noise), a wide level of two primes whose
// product is near 2^61 with 32-bit words.
inline constexpr int wide_level_bits = 61;

struct CkksParameters {
  int log_ring_degree = 14;
  // Ciphertext primes, q_0 first. bits64: the last one is dropped first.
  // bits32 (the rational chain): two terminal primes t1, t0 of about
  // sqrt(scale), then the main primes m_0, m_1, ... (a count of 2 mod 4, at
  // most 31 bits). The chain's primes are chosen so that every rescale
  // divides by about the scale: with c mains and both terminals a level
  // drops {t0, t1}; with c mains and none it drops two mains and adds t0;
  // with c mains and t0 it drops two mains and adds t1. Level 0 holds the
  // first two mains; the top level holds every prime. Two primes alone make
  // a chain of level 0 only (the sparse-secret encapsulation's low context).
  std::vector<int> q_bits;
  // bits32: the last 2 x wide_levels primes of q_bits are levels above the
  // rational chain, each of two primes whose product is about 2^61 (a
  // rescale drops the pair): bootstrapping's CoeffToSlot and EvalMod work at
  // that scale, as they do on the 64-bit family's 61-bit primes.
  int wide_levels = 0;
  std::vector<int> p_bits;        // special primes for hybrid key switching
  double scale = 0;               // default encoding scale (independent of prime sizes)
  WordSize word_size = WordSize::bits64;
  SecretDistribution secret = SecretDistribution::ternary;
  int hamming_weight = 0;         // 0: uniform ternary; otherwise a sparse secret of this weight
  int security_bits = 128;        // 128, 192 or 256
  bool allow_insecure = false;    // explicit opt-out of the security check

  std::uint64_t ring_degree() const { return std::uint64_t{1} << log_ring_degree; }
  std::uint64_t max_slots() const { return ring_degree() / 2; }
  int max_level() const;
  // Validates shapes and ranges (not security); throws ParameterError.
  void validate() const;
};

// Named presets mirroring the Python FHElium int64 family, e.g.
// "slots8192_scale40_levels7", and "slots32768_scale40_levels10_bootstrap"
// (the layout of circuits::bootstrap_parameters(16, 10): 10 levels left
// after a bootstrap). Throws ParameterError for an unknown name.
CkksParameters preset(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace fhelium
