// The states of a program's values, computed node by node by a real Engine
// over the state-only backend: every operation is checked by the Engine's own
// validation and every result's state is the one the Engine computes. The
// context-bound ProgramBuilder feeds it each node as it is added, and
// Program::prepare replays a finished program through it; there is no second
// copy of the Engine's rules.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/engine.hpp"
#include "fhelium/runtime/program.hpp"

namespace fhelium::runtime::detail {

class StateTracker {
 public:
  explicit StateTracker(std::shared_ptr<const Context> context);

  const std::shared_ptr<const Context>& context() const { return context_; }

  // Checks that `state` is a ciphertext of this context (StateError naming
  // the input otherwise) and records it for value `id`.
  void add_input(int id, const std::string& name, const ValueState& state);
  // A constant: top level and `scale` (default: the context's scale) until
  // its first use fixes its level.
  void add_constant(int id, std::optional<double> scale);
  // Runs `node` (the last node of `program`) on state only and records its
  // results' states. Throws the Engine's error prefixed by the node's label;
  // on a throw nothing is recorded.
  void apply(const Program& program, const Node& node);

  const ValueState& state(int id) const;
  // log2 of the modulus Q at `level`.
  double log_modulus(int level) const { return log_q_.at(static_cast<std::size_t>(level)); }
  std::vector<ValueState> states() const;

 private:
  struct Slot {
    ValueState state;
    std::optional<Ciphertext> ciphertext;
    std::optional<Plaintext> plaintext;
    std::string first_use_label;  // constants: the node that fixed the level
  };
  Slot& slot(int id);

  std::shared_ptr<const Context> context_;
  std::shared_ptr<Backend> backend_;
  Engine engine_;
  RelinKey relinearization_key_;
  GaloisKeys galois_keys_;
  std::vector<Slot> slots_;
  std::vector<double> log_q_;  // log2 of Q at each level
};

}  // namespace fhelium::runtime::detail
