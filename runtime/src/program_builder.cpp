// ProgramBuilder: the nodes of a Program, checked as they are added; a
// builder bound to a context also infers every value's state.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fhelium/error.hpp"
#include "fhelium/runtime/program.hpp"
#include "program_internal.hpp"
#include "state_tracker.hpp"

namespace fhelium::runtime {
namespace {

void require_finite(const char* op, const char* what, double value) {
  if (!std::isfinite(value)) {
    throw InvalidArgumentError(std::string(op) + ": " + what + " " + detail::format_double(value) + " is not finite");
  }
}

Node make_node(OpKind op, std::vector<int> args) {
  Node node;
  node.op = op;
  node.args = std::move(args);
  return node;
}

}  // namespace

// ---- ProgramBuilder ----

ProgramBuilder::ProgramBuilder(std::string name) {
  if (!detail::valid_name(name)) {
    throw InvalidArgumentError("program name '" + name +
                               "' is not a valid name (non-empty printable ASCII without spaces, ',', '=' or '#')");
  }
  program_.name_ = std::move(name);
}

ProgramBuilder::ProgramBuilder(std::shared_ptr<const Context> context, std::string name)
    : ProgramBuilder(std::move(name)) {
  if (!context) throw InvalidArgumentError("program " + program_.name_ + ": the context is a null pointer");
  tracker_ = std::make_unique<detail::StateTracker>(std::move(context));
}

ProgramBuilder::ProgramBuilder(ProgramBuilder&&) noexcept = default;
ProgramBuilder& ProgramBuilder::operator=(ProgramBuilder&&) noexcept = default;
ProgramBuilder::~ProgramBuilder() = default;

detail::StateTracker& ProgramBuilder::tracker(const char* what) const {
  if (!tracker_) {
    throw InvalidArgumentError(
        std::string(what) + ": program " + program_.name_ +
        " is built without a context, expected a builder made with ProgramBuilder(context, name)");
  }
  return *tracker_;
}

const std::shared_ptr<const Context>& ProgramBuilder::context() const { return tracker("context").context(); }

const ValueState& ProgramBuilder::state(ValueRef value) const {
  check_arg("state", value, true);
  return tracker("state").state(value.id);
}

std::string ProgramBuilder::fresh_name(const std::string& prefix) const {
  if (names_.count(prefix) == 0 && detail::valid_name(prefix)) return prefix;
  for (int i = 0;; ++i) {
    const std::string candidate = prefix + std::to_string(i);
    if (names_.count(candidate) == 0) return candidate;
  }
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

ValueRef ProgramBuilder::input(const std::string& name) {
  if (tracker_) {
    throw InvalidArgumentError("input '" + name + "': program " + program_.name_ +
                               " is bound to a context, expected input(name, state)");
  }
  return {declare(name, ValueKind::input, std::nullopt)};
}

ValueRef ProgramBuilder::input(const std::string& name, const ValueState& state) {
  detail::StateTracker& states = tracker("input");
  const int id = static_cast<int>(program_.values_.size());
  states.add_input(id, name, state);  // checks before the name is taken
  return {declare(name, ValueKind::input, std::nullopt)};
}

ValueRef ProgramBuilder::constant(const std::string& name, std::optional<double> scale) {
  if (scale && (!std::isfinite(*scale) || *scale <= 0)) {
    throw InvalidArgumentError("constant '" + name + "': scale " + detail::format_double(*scale) +
                               " is invalid, expected a finite positive value");
  }
  const ValueRef ref{declare(name, ValueKind::constant, scale)};
  if (tracker_) tracker_->add_constant(ref.id, scale);
  return ref;
}

ValueRef ProgramBuilder::constant(const std::string& name, Slots values, std::optional<double> scale) {
  if (tracker_ && values.size() > tracker_->context()->ring_degree() / 2) {
    throw InvalidArgumentError("constant '" + name + "': " + std::to_string(values.size()) +
                               " values, expected at most the slot count " +
                               std::to_string(tracker_->context()->ring_degree() / 2));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i].real()) || !std::isfinite(values[i].imag())) {
      throw InvalidArgumentError("constant '" + name + "': slot " + std::to_string(i) + " is not finite");
    }
  }
  const ValueRef ref = constant(name, scale);
  constant_values_[name] = std::move(values);
  return ref;
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
  // A plaintext constant may be the second operand of add/sub and must be
  // that of multiply_plain and every odd one of multiply_plain_sum;
  // everything else is a ciphertext.
  const auto constant_at = [&](std::size_t i) {
    return (node.op == OpKind::multiply_plain && i == 1) || (node.op == OpKind::multiply_plain_sum && i % 2 == 1);
  };
  for (std::size_t i = 0; i < node.args.size(); ++i) {
    const bool constant_allowed = i == 1 && (node.op == OpKind::add || node.op == OpKind::sub);
    check_arg(op, {node.args[i]}, constant_allowed || constant_at(i));
    const ValueInfo& value = program_.values_[static_cast<std::size_t>(node.args[i])];
    if (constant_at(i) && value.kind != ValueKind::constant) {
      throw InvalidArgumentError(std::string(op) + ": '" + value.name + "' (argument " + std::to_string(i) +
                                 ") is a ciphertext, expected a plaintext constant (use multiply)");
    }
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
  if (tracker_) check_constants_fit(node);
  program_.nodes_.push_back(std::move(node));
  if (tracker_) {
    try {
      tracker_->apply(program_, program_.nodes_.back());
    } catch (const Error&) {
      // The failed node leaves no trace.
      for (int id : program_.nodes_.back().results) names_.erase(program_.values_[static_cast<std::size_t>(id)].name);
      program_.values_.resize(program_.values_.size() - count);
      program_.nodes_.pop_back();
      if (tag_.empty()) throw;
      detail::rethrow_with_prefix(tag_ + ": ");
    }
  }
  return refs;
}

// Constants with values meet operand 0 at its level: their largest value
// times their scale must stay below the modulus there, or they wrap.
void ProgramBuilder::check_constants_fit(const Node& node) const {
  const int level = tracker_->state(node.args[0]).level;
  for (int arg : node.args) {
    const ValueInfo& info = program_.values_[static_cast<std::size_t>(arg)];
    const auto values = constant_values_.find(info.name);
    if (info.kind != ValueKind::constant || values == constant_values_.end()) continue;
    double largest = 0;
    for (const auto& v : values->second) largest = std::max(largest, std::abs(v));
    const std::string problem = magnitude_problem(largest, tracker_->state(arg).scale, level);
    if (!problem.empty()) {
      throw InvalidArgumentError(std::string(tag_.empty() ? "" : tag_ + ": ") + to_string(node.op) + ": constant '" +
                                 info.name + "': " + problem);
    }
  }
}

std::string ProgramBuilder::magnitude_problem(double largest, double scale, int level) const {
  if (largest == 0) return "";
  const double bits = std::log2(largest) + std::log2(scale);
  const double modulus = tracker("magnitude_problem").log_modulus(level);
  if (bits < modulus - 1) return "";
  char text[200];
  std::snprintf(text, sizeof text,
                "values up to %.6g at scale 2^%.1f reach 2^%.1f, beyond the modulus at level %d (2^%.1f): "
                "scale the values down",
                largest, std::log2(scale), bits, level, modulus);
  return text;
}

ValueRef ProgramBuilder::result_of(Node node) { return results_of(std::move(node), 1)[0]; }

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
ValueRef ProgramBuilder::mod_raise(ValueRef a) { return result_of(make_node(OpKind::mod_raise, {a.id})); }
ValueRef ProgramBuilder::mod_raise_encapsulated(ValueRef a) {
  return result_of(make_node(OpKind::mod_raise_encapsulated, {a.id}));
}

ValueRef ProgramBuilder::multiply_plain_sum(const std::vector<ValueRef>& values,
                                            const std::vector<ValueRef>& constants) {
  if (values.empty()) throw InvalidArgumentError("multiply_plain_sum: no terms, expected at least one");
  if (values.size() != constants.size()) {
    throw InvalidArgumentError("multiply_plain_sum: " + std::to_string(values.size()) + " values and " +
                               std::to_string(constants.size()) + " constants, expected one constant per value");
  }
  std::vector<int> args;
  for (std::size_t i = 0; i < values.size(); ++i) {
    args.push_back(values[i].id);
    args.push_back(constants[i].id);
  }
  return result_of(make_node(OpKind::multiply_plain_sum, std::move(args)));
}

ValueRef ProgramBuilder::rotate_sum(const std::vector<ValueRef>& values, const std::vector<long>& steps) {
  if (values.empty()) throw InvalidArgumentError("rotate_sum: no terms, expected at least one");
  if (values.size() != steps.size()) {
    throw InvalidArgumentError("rotate_sum: " + std::to_string(values.size()) + " values and " +
                               std::to_string(steps.size()) + " steps, expected one step per value");
  }
  std::vector<int> args;
  for (const auto& v : values) args.push_back(v.id);
  Node node = make_node(OpKind::rotate_sum, std::move(args));
  node.steps = steps;
  return result_of(std::move(node));
}

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

KeyRequirements ProgramBuilder::required_keys() const {
  return detail::key_requirements(program_, *tracker("required_keys").context());
}

PreparedProgram ProgramBuilder::prepare() const {
  const detail::StateTracker& states = tracker("prepare");
  PreparedProgram prepared;
  prepared.program_ = build();
  prepared.context_ = states.context();
  prepared.states_ = states.states();
  prepared.keys_ = detail::key_requirements(prepared.program_, *prepared.context_);
  return prepared;
}

Program ProgramBuilder::build() const {
  if (program_.outputs_.empty()) {
    throw InvalidArgumentError("program " + program_.name_ + " declares no output, expected at least one");
  }
  return program_;
}

}  // namespace fhelium::runtime
