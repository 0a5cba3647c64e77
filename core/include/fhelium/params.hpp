// CKKS parameters: ring degree, prime sizes, scale, special primes, security.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fhelium/security.hpp"

namespace fhelium {

// Size of one residue word. A property of the context and of every value's
// state; only 64-bit words are implemented today.
enum class WordSize : std::uint8_t { bits32 = 32, bits64 = 64 };

inline std::size_t word_bytes(WordSize w) { return w == WordSize::bits64 ? 8 : 4; }

struct CkksParameters {
  int log_ring_degree = 14;
  std::vector<int> q_bits;        // ciphertext primes, q_0 first (the last one is dropped first)
  std::vector<int> p_bits;        // special primes for hybrid key switching
  double scale = 0;               // default encoding scale (independent of prime sizes)
  WordSize word_size = WordSize::bits64;
  SecretDistribution secret = SecretDistribution::ternary;
  int hamming_weight = 0;         // 0: uniform ternary; otherwise a sparse secret of this weight
  int security_bits = 128;        // 128, 192 or 256
  bool allow_insecure = false;    // explicit opt-out of the security check

  std::uint64_t ring_degree() const { return std::uint64_t{1} << log_ring_degree; }
  std::uint64_t max_slots() const { return ring_degree() / 2; }
  int max_level() const { return static_cast<int>(q_bits.size()) - 1; }
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
