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

void require_finite(const char* op, const char* what, double value) {
  if (!std::isfinite(value)) {
    throw InvalidArgumentError(std::string(op) + ": " + what + " " + detail::format_double(value) + " is not finite");
  }
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
    throw StateError(prefix + e.what());
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
  if (std::fabs(actual.scale - expected.scale) > 1e-9 * std::max(std::fabs(actual.scale), std::fabs(expected.scale))) {
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

// ---- ProgramBuilder ----

ProgramBuilder::ProgramBuilder(std::string name) {
  if (!detail::valid_name(name)) {
    throw InvalidArgumentError("program name '" + name +
                               "' is not a valid name (non-empty printable ASCII without spaces, ',', '=' or '#')");
  }
  program_.name_ = std::move(name);
}

int ProgramBuilder::declare(const std::string& name, ValueKind kind, std::optional<double> constant_scale) {
  const char* what = kind == ValueKind::input ? "input" : "constant";
  if (!detail::valid_name(name)) {
    throw InvalidArgumentError(std::string(what) + " name '" + name +
                               "' is not a valid name (non-empty printable ASCII without spaces, ',', '=' or '#')");
  }
  if (names_.count(name) != 0) {
    throw InvalidArgumentError(std::string(what) + " '" + name + "': the name is already used by another value");
  }
  const int id = static_cast<int>(program_.values_.size());
  program_.values_.push_back({name, kind, constant_scale});
  names_[name] = id;
  return id;
}

ValueRef ProgramBuilder::input(const std::string& name) { return {declare(name, ValueKind::input, std::nullopt)}; }

ValueRef ProgramBuilder::constant(const std::string& name, std::optional<double> scale) {
  if (scale && (!std::isfinite(*scale) || *scale <= 0)) {
    throw InvalidArgumentError("constant '" + name + "': scale " + detail::format_double(*scale) +
                               " is invalid, expected a finite positive value");
  }
  return {declare(name, ValueKind::constant, scale)};
}

void ProgramBuilder::check_arg(const char* op, ValueRef value, bool constant_allowed) const {
  if (value.id < 0 || static_cast<std::size_t>(value.id) >= program_.values_.size()) {
    throw InvalidArgumentError(std::string(op) + ": value reference " + std::to_string(value.id) +
                               " is not a value of program " + program_.name_);
  }
  const ValueInfo& info = program_.values_[static_cast<std::size_t>(value.id)];
  if (!constant_allowed && info.kind == ValueKind::constant) {
    throw InvalidArgumentError(std::string(op) + ": '" + info.name +
                               "' is a plaintext constant, expected a ciphertext here");
  }
}

void ProgramBuilder::output(const std::string& name, ValueRef value) {
  check_arg("output", value, false);
  if (!detail::valid_name(name)) {
    throw InvalidArgumentError("output name '" + name +
                               "' is not a valid name (non-empty printable ASCII without spaces, ',', '=' or '#')");
  }
  for (const auto& [existing, id] : program_.outputs_) {
    if (existing == name) throw InvalidArgumentError("output '" + name + "' is declared twice");
  }
  program_.outputs_.emplace_back(name, value.id);
}

std::vector<ValueRef> ProgramBuilder::results_of(Node node, std::size_t count) {
  const char* op = to_string(node.op);
  const int expected = detail::arity(node.op);
  if (expected >= 0 && node.args.size() != static_cast<std::size_t>(expected)) {
    throw InvalidArgumentError(std::string(op) + ": expected " + std::to_string(expected) + " arguments, got " +
                               std::to_string(node.args.size()));
  }
  if (node.args.empty()) throw InvalidArgumentError(std::string(op) + ": expected at least one argument");
  for (std::size_t i = 0; i < node.args.size(); ++i) {
    // A plaintext constant may be the second operand of add/sub and must be
    // that of multiply_plain; everything else is a ciphertext.
    const bool constant_allowed = i == 1 && (node.op == OpKind::add || node.op == OpKind::sub);
    check_arg(op, {node.args[i]}, constant_allowed || (i == 1 && node.op == OpKind::multiply_plain));
  }
  if (node.op == OpKind::multiply_plain &&
      program_.values_[static_cast<std::size_t>(node.args[1])].kind != ValueKind::constant) {
    throw InvalidArgumentError("multiply_plain: '" + program_.values_[static_cast<std::size_t>(node.args[1])].name +
                               "' is a ciphertext, expected a plaintext constant (use multiply)");
  }
  std::vector<ValueRef> refs;
  node.results.clear();
  for (std::size_t i = 0; i < count; ++i) {
    std::string generated;
    do {
      generated = "%" + std::to_string(generated_++);
    } while (names_.count(generated) != 0);
    const int id = static_cast<int>(program_.values_.size());
    program_.values_.push_back({generated, ValueKind::result, std::nullopt});
    names_[generated] = id;
    node.results.push_back(id);
    refs.push_back({id});
  }
  program_.nodes_.push_back(std::move(node));
  return refs;
}

ValueRef ProgramBuilder::result_of(Node node) { return results_of(std::move(node), 1)[0]; }

namespace {
Node make_node(OpKind op, std::vector<int> args) {
  Node node;
  node.op = op;
  node.args = std::move(args);
  return node;
}
}  // namespace

ValueRef ProgramBuilder::add(ValueRef a, ValueRef b) { return result_of(make_node(OpKind::add, {a.id, b.id})); }
ValueRef ProgramBuilder::sub(ValueRef a, ValueRef b) { return result_of(make_node(OpKind::sub, {a.id, b.id})); }
ValueRef ProgramBuilder::negate(ValueRef a) { return result_of(make_node(OpKind::negate, {a.id})); }

ValueRef ProgramBuilder::add_scalar(ValueRef a, double value) {
  require_finite("add_scalar", "value", value);
  Node node = make_node(OpKind::add_scalar, {a.id});
  node.scalar = value;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::sub_scalar(ValueRef a, double value) {
  require_finite("sub_scalar", "value", value);
  Node node = make_node(OpKind::sub_scalar, {a.id});
  node.scalar = value;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::multiply(ValueRef a, ValueRef b) {
  return result_of(make_node(OpKind::multiply, {a.id, b.id}));
}

ValueRef ProgramBuilder::relinearize(ValueRef a) { return result_of(make_node(OpKind::relinearize, {a.id})); }

ValueRef ProgramBuilder::multiply_plain(ValueRef a, ValueRef constant) {
  return result_of(make_node(OpKind::multiply_plain, {a.id, constant.id}));
}

ValueRef ProgramBuilder::multiply_scalar(ValueRef a, double value, double scalar_scale) {
  require_finite("multiply_scalar", "value", value);
  require_finite("multiply_scalar", "scalar scale", scalar_scale);
  Node node = make_node(OpKind::multiply_scalar, {a.id});
  node.scalar = value;
  node.scalar_scale = scalar_scale;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::multiply_integer(ValueRef a, std::int64_t value) {
  Node node = make_node(OpKind::multiply_integer, {a.id});
  node.integer = value;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::rescale(ValueRef a) { return result_of(make_node(OpKind::rescale, {a.id})); }

ValueRef ProgramBuilder::drop_to_level(ValueRef a, int level) {
  Node node = make_node(OpKind::drop_to_level, {a.id});
  node.level = level;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::rotate(ValueRef a, long step) {
  Node node = make_node(OpKind::rotate, {a.id});
  node.step = step;
  return result_of(std::move(node));
}

ValueRef ProgramBuilder::conjugate(ValueRef a) { return result_of(make_node(OpKind::conjugate, {a.id})); }

std::vector<ValueRef> ProgramBuilder::rotate_hoisted(ValueRef a, const std::vector<long>& steps) {
  if (steps.empty()) throw InvalidArgumentError("rotate_hoisted: no steps, expected at least one");
  Node node = make_node(OpKind::rotate_hoisted, {a.id});
  node.steps = steps;
  return results_of(std::move(node), steps.size());
}

ValueRef ProgramBuilder::to_ntt(ValueRef a) { return result_of(make_node(OpKind::to_ntt, {a.id})); }
ValueRef ProgramBuilder::to_coefficient(ValueRef a) { return result_of(make_node(OpKind::to_coefficient, {a.id})); }

ValueRef ProgramBuilder::sum(const std::vector<ValueRef>& values) {
  if (values.empty()) throw InvalidArgumentError("sum: no arguments, expected at least one");
  std::vector<int> args;
  for (const auto& v : values) args.push_back(v.id);
  return result_of(make_node(OpKind::sum, std::move(args)));
}

ValueRef ProgramBuilder::multiply_relinearize_rescale(ValueRef a, ValueRef b) {
  return result_of(make_node(OpKind::multiply_relinearize_rescale, {a.id, b.id}));
}

void ProgramBuilder::name(ValueRef value, const std::string& name) {
  check_arg("name", value, true);
  ValueInfo& info = program_.values_[static_cast<std::size_t>(value.id)];
  if (info.kind != ValueKind::result) {
    throw InvalidArgumentError("name: '" + info.name + "' is an input or constant, only results can be renamed");
  }
  if (info.name == name) return;
  if (!detail::valid_name(name)) {
    throw InvalidArgumentError("name '" + name +
                               "' is not a valid name (non-empty printable ASCII without spaces, ',', '=' or '#')");
  }
  if (names_.count(name) != 0) {
    throw InvalidArgumentError("name '" + name + "' is already used by another value");
  }
  names_.erase(info.name);
  info.name = name;
  names_[name] = value.id;
}

Program ProgramBuilder::build() const {
  if (program_.outputs_.empty()) {
    throw InvalidArgumentError("program " + program_.name_ + " declares no output, expected at least one");
  }
  return program_;
}

}  // namespace fhelium::runtime
