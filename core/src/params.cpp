#include "fhelium/params.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "fhelium/error.hpp"
#include "rational_chain.hpp"

namespace fhelium {
namespace {

struct PresetShape {
  int log_n;
  int first_bits;
  int scale_bits;
  int levels;
  int special_count;
  int special_bits;
  // Bootstrapping presets: the primes a bootstrap consumes, above the
  // levels (circuits::bootstrap_parameters with the default configuration:
  // SlotToCoeff's 3 of scale_bits, EvalMod's 10 and CoeffToSlot's 3 of 61).
  int bootstrap_scale_primes = 0;
  int bootstrap_wide_primes = 0;
};

// The int64 family. Every preset passes the 128-bit ternary budget:
// log2(QP) = first + levels * scale + special_count * special_bits (+ the
// bootstrap's primes).
const std::map<std::string, PresetShape>& presets() {
  static const std::map<std::string, PresetShape> table = {
      {"slots8192_scale30_levels7", {14, 50, 30, 7, 1, 50}},                      // 310 <= 430
      {"slots8192_scale40_levels7", {14, 60, 40, 7, 1, 60}},                      // 400 <= 430
      {"slots8192_scale50_levels6", {14, 60, 50, 6, 1, 60}},                      // 420 <= 430
      {"slots16384_scale30_levels16", {15, 50, 30, 16, 2, 50}},                   // 630 <= 868
      {"slots16384_scale40_levels16", {15, 60, 40, 16, 2, 60}},                   // 820 <= 868
      {"slots16384_scale50_levels13", {15, 60, 50, 13, 2, 60}},                   // 830 <= 868
      {"slots32768_scale30_levels34", {16, 50, 30, 34, 4, 50}},                   // 1270 <= 1747
      {"slots32768_scale40_levels34", {16, 60, 40, 34, 4, 60}},                   // 1660 <= 1747
      {"slots32768_scale50_levels28", {16, 60, 50, 28, 4, 60}},                   // 1700 <= 1747
      {"slots32768_scale40_levels10_bootstrap", {16, 60, 40, 10, 6, 61, 3, 13}},  // 1739 <= 1747
  };
  return table;
}

// The int32 family (the rational chain of params.hpp; the primes are chosen
// when the context is made): log2(QP) ~ 40 + 30 x mains + 31 x special_count.
struct Int32Shape {
  int log_n;
  int mains;
  int special_count;
  int wide_levels = 0;  // bootstrapping presets: CoeffToSlot's 3 and EvalMod's 10
};

const std::map<std::string, Int32Shape>& int32_presets() {
  static const std::map<std::string, Int32Shape> table = {
      {"slots8192_scale40_levels7_int32", {14, 10, 2}},     // ~402 <= 430, 6 digits
      {"slots16384_scale40_levels16_int32", {15, 22, 5}},   // ~855 <= 868, 5 digits
      {"slots32768_scale40_levels34_int32", {16, 46, 10}},  // ~1730 <= 1747, 5 digits
      // 13 rational levels (10 left after SlotToCoeff's 3), 13 wide: ~1744 <= 1747, 4 digits.
      {"slots32768_scale40_levels10_bootstrap_int32", {16, 18, 12, 13}},
  };
  return table;
}

}  // namespace

void CkksParameters::validate() const {
  if (log_ring_degree < 10 || log_ring_degree > 17) {
    throw ParameterError("ring degree 2^" + std::to_string(log_ring_degree) +
                         " is out of range: expected 2^10 .. 2^17");
  }
  if (q_bits.empty()) throw ParameterError("q_bits is empty: expected at least one ciphertext prime");
  if (p_bits.empty()) {
    throw ParameterError("p_bits is empty: expected at least one special prime for key switching");
  }
  if (!(scale > 1.0) || !std::isfinite(scale)) {
    throw ParameterError("scale " + std::to_string(scale) + " is invalid: expected a finite value > 1");
  }
  if (word_size == WordSize::bits32) {
    const int q_count = static_cast<int>(q_bits.size());
    if (wide_levels < 0 || (wide_levels > 0 && 2 * wide_levels > q_count - 4)) {
      throw ParameterError("wide_levels " + std::to_string(wide_levels) + " with " + std::to_string(q_count) +
                           " q primes: expected 0 .. " + std::to_string(std::max(0, (q_count - 4) / 2)) +
                           " (two primes each, above a chain of at least four)");
    }
    const int mains = rational_chain::mains(*this);
    if (q_count != 2 && (mains < 2 || mains % 4 != 2)) {
      throw ParameterError("the 32-bit family's chain has " + std::to_string(q_count) + " q primes, " +
                           std::to_string(2 * wide_levels) +
                           " of them in wide levels: expected two terminal primes and 2 mod 4 main primes (6, 10, "
                           "14, ...) before them, or two primes alone (level 0 only)");
    }
    // Terminal primes near sqrt(scale) and main pairs near scale x t below 2^31 each.
    if (scale < std::ldexp(1.0, 38) || scale > std::ldexp(1.0, 41)) {
      throw ParameterError("scale 2^" + std::to_string(std::log2(scale)) +
                           " is outside the 32-bit family's chain: expected 2^38 .. 2^41");
    }
    for (int bits : p_bits) {
      if (bits > 31) {
        throw ParameterError("special prime of " + std::to_string(bits) +
                             " bits in the 32-bit family: expected at most 31");
      }
    }
  } else if (word_size != WordSize::bits64) {
    throw ParameterError("word size " + std::to_string(static_cast<int>(word_size)) + ": expected 32 or 64");
  } else if (wide_levels != 0) {
    throw ParameterError("wide_levels " + std::to_string(wide_levels) +
                         " in the 64-bit family: expected 0 (its levels are one prime each)");
  }
  if (security_bits != 128 && security_bits != 192 && security_bits != 256) {
    throw ParameterError("security level " + std::to_string(security_bits) + " bits: expected 128, 192 or 256");
  }
  if (hamming_weight < 0 || static_cast<std::uint64_t>(hamming_weight) > ring_degree()) {
    throw ParameterError("hamming weight " + std::to_string(hamming_weight) + " is out of range: expected 0.." +
                         std::to_string(ring_degree()));
  }
  if (hamming_weight != 0 && secret != SecretDistribution::ternary) {
    throw ParameterError("a sparse hamming weight needs a ternary secret");
  }
}

int CkksParameters::max_level() const {
  if (word_size == WordSize::bits32) {
    const int mains = rational_chain::mains(*this);
    return mains == 0 ? 0 : rational_chain::top_level(mains) + wide_levels;  // 0: level 0 only
  }
  return static_cast<int>(q_bits.size()) - 1;
}

CkksParameters preset(const std::string& name) {
  if (const auto small = int32_presets().find(name); small != int32_presets().end()) {
    CkksParameters p;
    p.log_ring_degree = small->second.log_n;
    p.word_size = WordSize::bits32;
    p.q_bits = {20, 20};
    p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(small->second.mains + 2 * small->second.wide_levels), 30);
    p.wide_levels = small->second.wide_levels;
    p.p_bits.assign(static_cast<std::size_t>(small->second.special_count), 31);
    p.scale = std::ldexp(1.0, 40);
    return p;
  }
  const auto it = presets().find(name);
  if (it == presets().end()) {
    std::string known;
    for (const auto& known_name : preset_names()) known += (known.empty() ? "" : ", ") + known_name;
    throw ParameterError("unknown preset '" + name + "': expected one of " + known);
  }
  const PresetShape& s = it->second;
  CkksParameters p;
  p.log_ring_degree = s.log_n;
  p.q_bits.push_back(s.first_bits);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(s.levels + s.bootstrap_scale_primes), s.scale_bits);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(s.bootstrap_wide_primes), wide_level_bits);
  p.p_bits.assign(static_cast<std::size_t>(s.special_count), s.special_bits);
  p.scale = std::ldexp(1.0, s.scale_bits);
  return p;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : presets()) names.push_back(k);
  for (const auto& [k, v] : int32_presets()) names.push_back(k);
  return names;
}

}  // namespace fhelium
