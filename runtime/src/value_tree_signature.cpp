#include "fhelium/runtime/value_tree_signature.hpp"

#include <cmath>
#include <sstream>

namespace fhelium::runtime {
namespace {

std::string structure_of(const ValueTree& tree) {
  if (tree.is_ciphertext() || tree.is_plaintext()) return "v";  // leaf types are compared per leaf
  std::string s;
  if (tree.is_list()) {
    s = "[";
    for (const auto& child : tree.list()) s += (s.size() > 1 ? "," : "") + structure_of(child);
    return s + "]";
  }
  s = "{";
  for (const auto& [name, child] : tree.map()) s += (s.size() > 1 ? "," : "") + name + ":" + structure_of(child);
  return s + "}";
}

std::string scale_text(double scale) {
  std::ostringstream s;
  s.precision(17);
  s << "2^" << std::log2(scale) << " (" << scale << ")";
  return s.str();
}

std::string primes_text(const std::vector<std::uint64_t>& primes) {
  return std::to_string(primes.size()) + " primes" + (primes.empty() ? "" : " ending " + std::to_string(primes.back()));
}

LeafSignature leaf_of(const std::string& path, const char* type, const Value& value, const Context& context) {
  LeafSignature leaf;
  leaf.path = path;
  leaf.type = type;
  leaf.state = value.state;
  leaf.bytes = value.buffer ? value.buffer->size_bytes() : 0;
  const int level = value.state.level;
  if (level >= 0 && level <= context.max_level()) {
    for (int i = 0; i < context.level_basis(level).count; ++i)
      leaf.active_primes.push_back(context.level_modulus(level, i).value);
  }
  if (value.state.basis == Basis::QP) {
    for (const auto& p : context.p()) leaf.active_primes.push_back(p.value);
  }
  if (level >= 0 && level <= context.max_level()) leaf.key_digits = context.key_switch(level).digits;
  return leaf;
}

}  // namespace

ValueTreeSignature ValueTreeSignature::of(const ValueTree& tree, const Context& context) {
  ValueTreeSignature sig;
  sig.structure_ = structure_of(tree);
  tree.for_each_leaf([&](const std::string& path, const ValueTree& leaf) {
    sig.leaves_.push_back(leaf_of(path, leaf.kind(), leaf.value(), context));
  });
  return sig;
}

std::optional<std::string> ValueTreeSignature::first_difference(const ValueTreeSignature& actual) const {
  if (structure_ != actual.structure_) {
    return "structure: expected " + structure_ + ", got " + actual.structure_;
  }
  for (std::size_t i = 0; i < leaves_.size(); ++i) {
    const LeafSignature& e = leaves_[i];
    const LeafSignature& a = actual.leaves_[i];
    const std::string at = e.path.empty() ? std::string("value") : e.path;
    auto differ = [&](const char* field, const std::string& expected, const std::string& got) {
      return at + "." + field + ": expected " + expected + ", got " + got;
    };
    if (e.type != a.type) return differ("type", e.type, a.type);
    if (e.state.context_id != a.state.context_id) {
      return differ("context", std::to_string(e.state.context_id), std::to_string(a.state.context_id));
    }
    if (e.state.word_size != a.state.word_size) {
      return differ("word_size", std::to_string(static_cast<int>(e.state.word_size)),
                    std::to_string(static_cast<int>(a.state.word_size)));
    }
    if (e.state.level != a.state.level) {
      return differ("level", std::to_string(e.state.level), std::to_string(a.state.level));
    }
    if (e.state.scale != a.state.scale) return differ("scale", scale_text(e.state.scale), scale_text(a.state.scale));
    if (e.active_primes != a.active_primes) {
      return differ("active_primes", primes_text(e.active_primes), primes_text(a.active_primes));
    }
    if (e.state.domain != a.state.domain) return differ("domain", to_string(e.state.domain), to_string(a.state.domain));
    if (e.state.basis != a.state.basis) return differ("basis", to_string(e.state.basis), to_string(a.state.basis));
    if (e.state.components != a.state.components) {
      return differ("components", std::to_string(e.state.components), std::to_string(a.state.components));
    }
    if (e.key_digits != a.key_digits) {
      return differ("key_digits", std::to_string(e.key_digits), std::to_string(a.key_digits));
    }
    if (e.bytes != a.bytes) return differ("bytes", std::to_string(e.bytes), std::to_string(a.bytes));
  }
  return std::nullopt;
}

std::string ValueTreeSignature::describe() const {
  std::ostringstream s;
  s << structure_;
  for (const auto& leaf : leaves_)
    s << "\n  " << (leaf.path.empty() ? "value" : leaf.path) << ": " << leaf.type << " " << leaf.state.describe();
  return s.str();
}

}  // namespace fhelium::runtime
