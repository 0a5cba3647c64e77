// Program: the builder, accessors and equality, and the helpers shared by the
// other Program sources.
#include "fhelium/runtime/program.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "fhelium/error.hpp"
#include "program_internal.hpp"

namespace fhelium::runtime {
namespace {

struct OpName {
  OpKind op;
  const char* name;
};

constexpr OpName op_names[] = {
    {OpKind::add, "add"},
    {OpKind::sub, "sub"},
    {OpKind::negate, "negate"},
    {OpKind::add_scalar, "add_scalar"},
    {OpKind::sub_scalar, "sub_scalar"},
    {OpKind::multiply, "multiply"},
    {OpKind::relinearize, "relinearize"},
    {OpKind::multiply_plain, "multiply_plain"},
    {OpKind::multiply_scalar, "multiply_scalar"},
    {OpKind::multiply_integer, "multiply_integer"},
    {OpKind::rescale, "rescale"},
    {OpKind::drop_to_level, "drop_to_level"},
    {OpKind::rotate, "rotate"},
    {OpKind::conjugate, "conjugate"},
    {OpKind::rotate_hoisted, "rotate_hoisted"},
    {OpKind::to_ntt, "to_ntt"},
    {OpKind::to_coefficient, "to_coefficient"},
    {OpKind::sum, "sum"},
    {OpKind::multiply_relinearize_rescale, "multiply_relinearize_rescale"},
    {OpKind::mod_raise, "mod_raise"},
    {OpKind::mod_raise_encapsulated, "mod_raise_encapsulated"},
    {OpKind::multiply_plain_sum, "multiply_plain_sum"},
    {OpKind::rotate_sum, "rotate_sum"},
};

bool same_node(const Node& a, const Node& b) {
  return a.op == b.op && a.args == b.args && a.results == b.results && a.scalar == b.scalar &&
         a.scalar_scale == b.scalar_scale && a.integer == b.integer && a.level == b.level && a.step == b.step &&
         a.steps == b.steps;
}

bool same_value(const ValueInfo& a, const ValueInfo& b) {
  return a.name == b.name && a.kind == b.kind && a.constant_scale == b.constant_scale;
}

std::string join_steps(const std::vector<long>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size(); ++i) out += (i == 0 ? "" : ",") + std::to_string(steps[i]);
  return out;
}

}  // namespace

const char* to_string(OpKind op) {
  for (const auto& entry : op_names) {
    if (entry.op == op) return entry.name;
  }
  return "unknown";
}

OpKind op_kind_from_string(const std::string& name) {
  for (const auto& entry : op_names) {
    if (name == entry.name) return entry.op;
  }
  std::string known;
  for (const auto& entry : op_names) known += (known.empty() ? "" : ", ") + std::string(entry.name);
  throw InvalidArgumentError("unknown operation '" + name + "' (known operations: " + known + ")");
}

// ---- shared helpers ----

namespace detail {

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c <= ' ' || c > '~' || c == ',' || c == '=' || c == '#') return false;
  }
  return true;
}

std::string format_double(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

int arity(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::multiply:
    case OpKind::multiply_plain:
    case OpKind::multiply_relinearize_rescale:
      return 2;
    case OpKind::sum:
    case OpKind::multiply_plain_sum:
    case OpKind::rotate_sum:
      return -1;
    default:
      return 1;
  }
}

std::string attribute_text(const Node& node) {
  switch (node.op) {
    case OpKind::add_scalar:
    case OpKind::sub_scalar:
      return "value=" + format_double(node.scalar);
    case OpKind::multiply_scalar:
      return "value=" + format_double(node.scalar) + " scale=" + format_double(node.scalar_scale);
    case OpKind::multiply_integer:
      return "value=" + std::to_string(node.integer);
    case OpKind::drop_to_level:
      return "level=" + std::to_string(node.level);
    case OpKind::rotate:
      return "step=" + std::to_string(node.step);
    case OpKind::rotate_hoisted:
    case OpKind::rotate_sum:
      return "steps=" + join_steps(node.steps);
    default:
      return "";
  }
}

std::string operation_text(const Program& program, const Node& node, const char* separator) {
  std::string out = to_string(node.op);
  for (std::size_t i = 0; i < node.args.size(); ++i) {
    out += (i == 0 ? " " : separator) + program.values()[static_cast<std::size_t>(node.args[i])].name;
  }
  const std::string attributes = attribute_text(node);
  if (!attributes.empty()) out += " " + attributes;
  return out;
}

std::string describe_operation(const Program& program, const Node& node) { return operation_text(program, node, ", "); }

std::string result_names(const Program& program, const Node& node) {
  std::string out;
  for (std::size_t i = 0; i < node.results.size(); ++i) {
    out += (i == 0 ? "" : ", ") + program.values()[static_cast<std::size_t>(node.results[i])].name;
  }
  return out;
}

std::string node_label(const Program& program, const Node& node) {
  return result_names(program, node) + " (" + describe_operation(program, node) + ")";
}

void rethrow_with_prefix(const std::string& prefix) {
  try {
    throw;
  } catch (const SecurityError& e) {
    throw SecurityError(prefix + e.what());
  } catch (const ParameterError& e) {
    throw ParameterError(prefix + e.what());
  } catch (const StateError& e) {
    throw StateError(prefix + e.what(), e.mismatch());
  } catch (const MissingKeyError& e) {
    throw MissingKeyError(prefix + e.what());
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(prefix + e.what());
  } catch (const BackendError& e) {
    throw BackendError(prefix + e.what());
  } catch (const PluginError& e) {
    throw PluginError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

std::string state_difference(const ValueState& actual, const ValueState& expected) {
  std::vector<std::string> fields;
  const auto differ = [&](const char* field, const std::string& a, const std::string& e) {
    fields.push_back(std::string(field) + " is " + a + ", expected " + e);
  };
  if (actual.context_id != expected.context_id) {
    differ("context", std::to_string(actual.context_id), std::to_string(expected.context_id));
  }
  if (actual.word_size != expected.word_size) {
    differ("word size", std::to_string(static_cast<int>(actual.word_size)),
           std::to_string(static_cast<int>(expected.word_size)));
  }
  if (actual.level != expected.level) differ("level", std::to_string(actual.level), std::to_string(expected.level));
  if (!same_scale(actual.scale, expected.scale)) {
    const auto scale_text = [](double s) {
      std::ostringstream out;
      out << s << " (2^" << std::log2(s) << ")";
      return out.str();
    };
    differ("scale", scale_text(actual.scale), scale_text(expected.scale));
  }
  if (actual.domain != expected.domain) differ("domain", to_string(actual.domain), to_string(expected.domain));
  if (actual.basis != expected.basis) differ("basis", to_string(actual.basis), to_string(expected.basis));
  if (actual.components != expected.components) {
    differ("components", std::to_string(actual.components), std::to_string(expected.components));
  }
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : "; ") + f;
  return out;
}

}  // namespace detail

// ---- Program ----

std::vector<std::string> Program::input_names() const {
  std::vector<std::string> names;
  for (const auto& v : values_) {
    if (v.kind == ValueKind::input) names.push_back(v.name);
  }
  return names;
}

std::vector<std::string> Program::constant_names() const {
  std::vector<std::string> names;
  for (const auto& v : values_) {
    if (v.kind == ValueKind::constant) names.push_back(v.name);
  }
  return names;
}

bool Program::operator==(const Program& other) const {
  if (name_ != other.name_ || outputs_ != other.outputs_ || values_.size() != other.values_.size() ||
      nodes_.size() != other.nodes_.size()) {
    return false;
  }
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (!same_value(values_[i], other.values_[i])) return false;
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!same_node(nodes_[i], other.nodes_[i])) return false;
  }
  return true;
}

}  // namespace fhelium::runtime
