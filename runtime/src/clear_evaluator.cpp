#include "fhelium/runtime/clear_evaluator.hpp"

#include "fhelium/encoder.hpp"
#include "fhelium/error.hpp"

namespace fhelium::runtime {
namespace {

Slots padded(const std::string& what, const std::string& name, const Slots& values, std::size_t slots) {
  if (values.size() > slots) {
    throw InvalidArgumentError("evaluate_clear: " + what + " '" + name + "' has " + std::to_string(values.size()) +
                               " values, expected at most the slot count " + std::to_string(slots));
  }
  Slots out = values;
  out.resize(slots);
  return out;
}

template <typename F>
Slots map(const Slots& a, F f) {
  Slots out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i]);
  return out;
}

template <typename F>
Slots zip(const Slots& a, const Slots& b, F f) {
  Slots out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = f(a[i], b[i]);
  return out;
}

}  // namespace

std::vector<Slots> evaluate_clear_values(const Program& program, const std::map<std::string, Slots>& inputs,
                                         const std::map<std::string, Slots>& constants, std::size_t slots) {
  if (slots == 0) throw InvalidArgumentError("evaluate_clear: slot count 0, expected at least one slot");
  const auto& infos = program.values();
  std::vector<Slots> values(infos.size());
  for (std::size_t id = 0; id < infos.size(); ++id) {
    const ValueInfo& v = infos[id];
    if (v.kind == ValueKind::result) continue;
    const bool is_input = v.kind == ValueKind::input;
    const auto& source = is_input ? inputs : constants;
    const auto found = source.find(v.name);
    if (found == source.end()) {
      throw InvalidArgumentError("evaluate_clear: no values for " + std::string(is_input ? "input" : "constant") +
                                 " '" + v.name + "' of program " + program.name());
    }
    values[id] = padded(is_input ? "input" : "constant", v.name, found->second, slots);
  }
  using C = std::complex<double>;
  for (const Node& node : program.nodes()) {
    const auto arg = [&](std::size_t i) -> const Slots& { return values[static_cast<std::size_t>(node.args[i])]; };
    const auto set = [&](std::size_t i, Slots v) { values[static_cast<std::size_t>(node.results[i])] = std::move(v); };
    switch (node.op) {
      case OpKind::add:
        set(0, zip(arg(0), arg(1), [](C a, C b) { return a + b; }));
        break;
      case OpKind::sub:
        set(0, zip(arg(0), arg(1), [](C a, C b) { return a - b; }));
        break;
      case OpKind::negate:
        set(0, map(arg(0), [](C a) { return -a; }));
        break;
      case OpKind::add_scalar:
        set(0, map(arg(0), [&](C a) { return a + node.scalar; }));
        break;
      case OpKind::sub_scalar:
        set(0, map(arg(0), [&](C a) { return a - node.scalar; }));
        break;
      case OpKind::multiply:
      case OpKind::multiply_plain:
      case OpKind::multiply_relinearize_rescale:
        set(0, zip(arg(0), arg(1), [](C a, C b) { return a * b; }));
        break;
      case OpKind::multiply_scalar:
        set(0, map(arg(0), [&](C a) { return a * node.scalar; }));
        break;
      case OpKind::multiply_integer:
        set(0, map(arg(0), [&](C a) { return a * static_cast<double>(node.integer); }));
        break;
      case OpKind::relinearize:
      case OpKind::rescale:
      case OpKind::drop_to_level:
      case OpKind::to_ntt:
      case OpKind::to_coefficient:
      case OpKind::mod_raise:  // the message is unchanged; q_0 I is the circuit's to remove
      case OpKind::mod_raise_encapsulated:
        set(0, arg(0));
        break;
      case OpKind::rotate:
        set(0, rotate_slots(arg(0), node.step));
        break;
      case OpKind::conjugate:
        set(0, map(arg(0), [](C a) { return std::conj(a); }));
        break;
      case OpKind::rotate_hoisted:
        for (std::size_t i = 0; i < node.steps.size(); ++i) set(i, rotate_slots(arg(0), node.steps[i]));
        break;
      case OpKind::rotate_sum: {
        Slots total(slots);
        for (std::size_t i = 0; i < node.args.size(); ++i) {
          total = zip(total, rotate_slots(arg(i), node.steps[i]), [](C a, C b) { return a + b; });
        }
        set(0, std::move(total));
        break;
      }
      case OpKind::sum: {
        Slots total(slots);
        for (std::size_t i = 0; i < node.args.size(); ++i) total = zip(total, arg(i), [](C a, C b) { return a + b; });
        set(0, std::move(total));
        break;
      }
      case OpKind::multiply_plain_sum: {
        Slots total(slots);
        for (std::size_t i = 0; i + 1 < node.args.size(); i += 2) {
          total = zip(total, zip(arg(i), arg(i + 1), [](C a, C b) { return a * b; }), [](C a, C b) { return a + b; });
        }
        set(0, std::move(total));
        break;
      }
    }
  }
  return values;
}

std::map<std::string, Slots> evaluate_clear(const Program& program, const std::map<std::string, Slots>& inputs,
                                            const std::map<std::string, Slots>& constants, std::size_t slots) {
  const std::vector<Slots> values = evaluate_clear_values(program, inputs, constants, slots);
  std::map<std::string, Slots> out;
  for (const auto& [name, id] : program.outputs()) out[name] = values[static_cast<std::size_t>(id)];
  return out;
}

}  // namespace fhelium::runtime
