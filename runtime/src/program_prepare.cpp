// Program::prepare: the program runs once through a real Engine over the
// state-only backend, so every operation is checked by the Engine's own
// validation and every result's state is the one the Engine computes.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "fhelium/error.hpp"
#include "fhelium/runtime/program.hpp"
#include "program_internal.hpp"
#include "state_backend.hpp"

namespace fhelium::runtime {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

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
        for (long step : node.steps) add_step(step);
        break;
      case OpKind::conjugate:
        keys.conjugation = true;
        break;
      default:
        break;
    }
  }
  return keys;
}

// An input must be a ciphertext of this context.
void check_input_state(const std::string& name, const ValueState& s, const Context& context) {
  std::string problem;
  if (s.context_id != context.id()) {
    problem =
        "belongs to context " + std::to_string(s.context_id) + ", expected context " + std::to_string(context.id());
  } else if (s.word_size != context.word_size()) {
    problem = "has word size " + std::to_string(static_cast<int>(s.word_size)) + ", expected " +
              std::to_string(static_cast<int>(context.word_size()));
  } else if (s.basis != Basis::Q) {
    problem = "is in basis QP, expected basis Q";
  } else if (s.level < 0 || s.level > context.max_level()) {
    problem = "has level " + std::to_string(s.level) + ", expected 0.." + std::to_string(context.max_level());
  } else if (s.components != 2 && s.components != 3) {
    problem = "has " + std::to_string(s.components) + " components, expected a ciphertext (2 or 3)";
  } else if (!(s.scale > 0) || !std::isfinite(s.scale)) {
    problem = "has scale " + std::to_string(s.scale) + ", expected a finite positive scale";
  }
  if (!problem.empty()) throw StateError("input " + name + ": state " + s.describe() + " " + problem);
}

}  // namespace

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
  const Context& ctx = *context;
  const auto inputs = input_names();
  for (const auto& [name, state] : input_states) {
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
      throw InvalidArgumentError("prepare " + name_ + ": '" + name + "' is not an input (inputs: " + join(inputs) +
                                 ")");
    }
  }

  PreparedProgram prepared;
  prepared.program_ = *this;
  prepared.context_ = context;
  prepared.states_.resize(values_.size());
  prepared.keys_ = key_requirements(*this, ctx);

  // An Engine over state-only buffers, with stand-in keys for everything the
  // program uses (the keys' own presence is checked at link time).
  auto backend = detail::make_state_backend();
  const Engine engine(context, backend);
  RelinKey relinearization_key;
  relinearization_key.context_id = ctx.id();
  relinearization_key.digits = ctx.key_digits();
  relinearization_key.buffer = backend->allocate(0);
  GaloisKeys galois_keys;
  galois_keys.context_id = ctx.id();
  for (std::uint32_t element : prepared.keys_.galois_elements(ctx)) {
    galois_keys.keys[element] = SwitchKey{ctx.id(), ctx.key_digits(), backend->allocate(0)};
  }
  const auto storage = [&](const ValueState& s) { return backend->allocate(s.words(ctx) * word_bytes(s.word_size)); };

  std::vector<Ciphertext> ciphertexts(values_.size());
  std::vector<Plaintext> plaintexts(values_.size());
  std::vector<const Node*> first_use(values_.size(), nullptr);  // constants: the node that fixed the state

  for (std::size_t id = 0; id < values_.size(); ++id) {
    const ValueInfo& v = values_[id];
    if (v.kind == ValueKind::input) {
      const auto found = input_states.find(v.name);
      if (found == input_states.end()) {
        throw InvalidArgumentError("prepare " + name_ + ": no state was given for input '" + v.name + "'");
      }
      check_input_state(v.name, found->second, ctx);
      prepared.states_[id] = found->second;
      ciphertexts[id].state = found->second;
      ciphertexts[id].buffer = storage(found->second);
    } else if (v.kind == ValueKind::constant) {
      // Until a use fixes its level: the top level (an unused constant keeps it).
      ValueState s;
      s.context_id = ctx.id();
      s.word_size = ctx.word_size();
      s.level = ctx.max_level();
      s.scale = v.constant_scale.value_or(ctx.params().scale);
      s.domain = Domain::ntt;
      s.basis = Basis::Q;
      s.components = 1;
      prepared.states_[id] = s;
    }
  }

  for (const Node& node : nodes_) {
    std::vector<detail::Operand> operands;
    for (int arg : node.args) {
      const auto a = static_cast<std::size_t>(arg);
      if (values_[a].kind != ValueKind::constant) {
        operands.push_back({&ciphertexts[a], nullptr});
        continue;
      }
      // A constant takes the level of the ciphertext it meets (operand 0).
      const int level = ciphertexts[static_cast<std::size_t>(node.args[0])].state.level;
      ValueState& s = prepared.states_[a];
      if (first_use[a] == nullptr) {
        s.level = level;
        first_use[a] = &node;
        plaintexts[a].state = s;
        plaintexts[a].buffer = storage(s);
      } else if (s.level != level) {
        throw StateError(detail::node_label(*this, node) + ": constant " + values_[a].name + " is used here at level " +
                         std::to_string(level) + " and by " + detail::node_label(*this, *first_use[a]) + " at level " +
                         std::to_string(s.level) + ", expected one level per constant");
      }
      operands.push_back({nullptr, &plaintexts[a]});
    }
    std::vector<Ciphertext> results;
    try {
      results = detail::execute_node(engine, node, operands, relinearization_key, galois_keys);
    } catch (const Error&) {
      detail::rethrow_with_prefix(detail::node_label(*this, node) + ": ");
    }
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto id = static_cast<std::size_t>(node.results[i]);
      prepared.states_[id] = results[i].state;
      ciphertexts[id] = std::move(results[i]);
    }
  }
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
