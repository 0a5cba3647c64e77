// The signature of a ValueTree: its structure and, for every leaf, the type
// and exact state (context, word size, level, scale, active primes, domain,
// basis, components, key specialization). The device is deliberately not
// part of it. GraphProgram requires every replay's inputs to match exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/runtime/value_tree.hpp"

namespace fhelium::runtime {

struct LeafSignature {
  std::string path;              // "x", "w[2]", "a.b"
  std::string type;              // "ciphertext" | "plaintext"
  ValueState state;
  std::vector<std::uint64_t> active_primes;  // q_0 .. q_level (then P for basis QP)
  int key_digits = 0;            // the context's key-switching specialization
  std::size_t bytes = 0;
  bool operator==(const LeafSignature&) const = default;
};

class ValueTreeSignature {
 public:
  static ValueTreeSignature of(const ValueTree& tree, const Context& context);

  const std::vector<LeafSignature>& leaves() const { return leaves_; }
  const std::string& structure() const { return structure_; }
  // "x.level: expected 7, got 6" for the first differing field, or nothing.
  std::optional<std::string> first_difference(const ValueTreeSignature& actual) const;
  std::string describe() const;
  bool operator==(const ValueTreeSignature&) const = default;

 private:
  std::string structure_;  // e.g. "{w:[v,v],x:v}"
  std::vector<LeafSignature> leaves_;
};

}  // namespace fhelium::runtime
