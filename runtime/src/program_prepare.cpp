// Program::prepare: a replay of the program through the StateTracker (the
// Engine's own rules on state only), and the keys a program needs.
#include <algorithm>
#include <sstream>

#include "fhelium/error.hpp"
#include "fhelium/runtime/program.hpp"
#include "program_internal.hpp"
#include "state_tracker.hpp"

namespace fhelium::runtime {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

namespace detail {

KeyRequirements key_requirements(const Program& program, const Context& context) {
  const long slots = static_cast<long>(context.ring_degree() / 2);
  KeyRequirements keys;
  const auto add_step = [&](long step) {
    if (step % slots != 0) keys.rotation_steps.insert(step);  // rotation by 0 needs no key
  };
  for (const Node& node : program.nodes()) {
    switch (node.op) {
      case OpKind::multiply_relinearize_rescale:
      case OpKind::relinearize:
        keys.relinearization = true;
        break;
      case OpKind::rotate:
        add_step(node.step);
        break;
      case OpKind::rotate_hoisted:
      case OpKind::rotate_sum:
        for (long step : node.steps) add_step(step);
        break;
      case OpKind::conjugate:
        keys.conjugation = true;
        break;
      case OpKind::mod_raise_encapsulated:
        keys.sparse_encapsulation = true;
        break;
      default:
        break;
    }
  }
  return keys;
}

}  // namespace detail

std::set<std::uint32_t> KeyRequirements::galois_elements(const Context& context) const {
  std::set<std::uint32_t> elements;
  for (long step : rotation_steps) elements.insert(context.galois_element(step));
  if (conjugation) elements.insert(context.conjugation_element());
  return elements;
}

PreparedProgram Program::prepare(std::shared_ptr<const Context> context, const ValueState& prototype) const {
  std::map<std::string, ValueState> states;
  for (const auto& name : input_names()) states[name] = prototype;
  return prepare(std::move(context), states);
}

PreparedProgram Program::prepare(std::shared_ptr<const Context> context,
                                 const std::map<std::string, ValueState>& input_states) const {
  if (!context) throw InvalidArgumentError("prepare " + name_ + ": the context is a null pointer");
  const auto inputs = input_names();
  for (const auto& [name, state] : input_states) {
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
      throw InvalidArgumentError("prepare " + name_ + ": '" + name + "' is not an input (inputs: " + join(inputs) +
                                 ")");
    }
  }

  // A replay through the same checks as a bound ProgramBuilder.
  detail::StateTracker tracker(context);
  for (std::size_t id = 0; id < values_.size(); ++id) {
    const ValueInfo& v = values_[id];
    if (v.kind == ValueKind::input) {
      const auto found = input_states.find(v.name);
      if (found == input_states.end()) {
        throw InvalidArgumentError("prepare " + name_ + ": no state was given for input '" + v.name + "'");
      }
      tracker.add_input(static_cast<int>(id), v.name, found->second);
    } else if (v.kind == ValueKind::constant) {
      tracker.add_constant(static_cast<int>(id), v.constant_scale);
    }
  }
  for (const Node& node : nodes_) tracker.apply(*this, node);

  PreparedProgram prepared;
  prepared.program_ = *this;
  prepared.context_ = std::move(context);
  prepared.states_ = tracker.states();
  prepared.keys_ = detail::key_requirements(*this, *prepared.context_);
  return prepared;
}

const ValueState& PreparedProgram::state(const std::string& name) const {
  const auto& values = program_.values();
  for (std::size_t id = 0; id < values.size(); ++id) {
    if (values[id].name == name) return states_[id];
  }
  for (const auto& [output, id] : program_.outputs()) {
    if (output == name) return states_[static_cast<std::size_t>(id)];
  }
  throw InvalidArgumentError("program " + program_.name() + " has no value or output named '" + name + "'");
}

std::map<std::string, ValueState> PreparedProgram::constant_states() const {
  std::map<std::string, ValueState> out;
  const auto& values = program_.values();
  for (std::size_t id = 0; id < values.size(); ++id) {
    if (values[id].kind == ValueKind::constant) out[values[id].name] = states_[id];
  }
  return out;
}

std::string PreparedProgram::describe() const {
  std::ostringstream out;
  const auto& values = program_.values();
  for (std::size_t id = 0; id < values.size(); ++id) out << values[id].name << ": " << states_[id].describe() << "\n";
  return out.str();
}

}  // namespace fhelium::runtime
