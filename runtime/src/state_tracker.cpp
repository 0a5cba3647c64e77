#include "state_tracker.hpp"

#include <cmath>
#include <cstdio>

#include "fhelium/error.hpp"
#include "program_internal.hpp"
#include "state_backend.hpp"

namespace fhelium::runtime::detail {
namespace {

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

StateTracker::StateTracker(std::shared_ptr<const Context> context)
    : context_(std::move(context)), backend_(make_state_backend()), engine_(context_, backend_) {
  relinearization_key_.context_id = context_->id();
  relinearization_key_.digits = context_->key_digits();
  relinearization_key_.buffer = backend_->allocate(0);
  galois_keys_.context_id = context_->id();
  for (int level = 0; level <= context_->max_level(); ++level) {
    double sum = 0;
    for (int i = 0; i < context_->level_basis(level).count; ++i) {
      sum += std::log2(static_cast<double>(context_->level_modulus(level, i).value));
    }
    log_q_.push_back(sum);
  }
}

StateTracker::Slot& StateTracker::slot(int id) {
  const auto i = static_cast<std::size_t>(id);
  if (slots_.size() <= i) slots_.resize(i + 1);
  return slots_[i];
}

const ValueState& StateTracker::state(int id) const { return slots_.at(static_cast<std::size_t>(id)).state; }

std::vector<ValueState> StateTracker::states() const {
  std::vector<ValueState> out;
  out.reserve(slots_.size());
  for (const Slot& s : slots_) out.push_back(s.state);
  return out;
}

void StateTracker::add_input(int id, const std::string& name, const ValueState& state) {
  check_input_state(name, state, *context_);
  Slot& s = slot(id);
  s.state = state;
  s.ciphertext = Ciphertext{state, backend_->allocate(state.words(*context_) * stored_word_bytes(state.word_size))};
}

void StateTracker::add_constant(int id, std::optional<double> scale) {
  ValueState s;
  s.context_id = context_->id();
  s.word_size = context_->word_size();
  s.level = context_->max_level();
  s.scale = scale.value_or(context_->params().scale);
  s.domain = Domain::ntt;
  s.basis = Basis::Q;
  s.components = 1;
  slot(id).state = s;
}

void StateTracker::apply(const Program& program, const Node& node) {
  const auto& values = program.values();
  const std::string label = node_label(program, node);
  const long slot_count = static_cast<long>(context_->ring_degree() / 2);
  // Stand-in keys for every key the node uses: their presence is checked at
  // link time, here only states matter.
  const auto stand_in = [&](std::uint32_t element) {
    if (!galois_keys_.contains(element)) {
      galois_keys_.keys[element] = SwitchKey{context_->id(), context_->key_digits(), backend_->allocate(0)};
    }
  };
  if (node.op == OpKind::rotate && node.step % slot_count != 0) stand_in(context_->galois_element(node.step));
  if (node.op == OpKind::rotate_hoisted || node.op == OpKind::rotate_sum) {
    for (long step : node.steps) {
      if (step % slot_count != 0) stand_in(context_->galois_element(step));
    }
  }
  if (node.op == OpKind::conjugate) stand_in(context_->conjugation_element());

  // A constant takes the level of the ciphertext it meets (operand 0); the
  // level is fixed only once the node succeeds.
  std::vector<Operand> operands;
  std::vector<Plaintext> fixed_constants;
  fixed_constants.reserve(node.args.size());
  for (int arg : node.args) {
    Slot& s = slot(arg);
    if (values[static_cast<std::size_t>(arg)].kind != ValueKind::constant) {
      operands.push_back({&*s.ciphertext, nullptr});
      continue;
    }
    const int level = slot(node.args[0]).state.level;
    if (s.plaintext && s.state.level != level) {
      throw StateError(label + ": constant " + values[static_cast<std::size_t>(arg)].name + " is used here at level " +
                       std::to_string(level) + " and by " + s.first_use_label + " at level " +
                       std::to_string(s.state.level) + ", expected one level per constant");
    }
    ValueState state = s.state;
    state.level = level;
    fixed_constants.push_back(
        Plaintext{state, backend_->allocate(state.words(*context_) * stored_word_bytes(state.word_size))});
    operands.push_back({nullptr, &fixed_constants.back()});
  }
  std::vector<Ciphertext> results;
  try {
    results = execute_node(engine_, node, operands, relinearization_key_, galois_keys_);
  } catch (const Error&) {
    rethrow_with_prefix(label + ": ");
  }
  // A result whose scale reaches the modulus decrypts to garbage.
  for (const Ciphertext& r : results) {
    const double bits = std::log2(r.state.scale);
    const double modulus = log_q_[static_cast<std::size_t>(r.state.level)];
    if (bits >= modulus - 1) {
      char got[32], expected[96];
      std::snprintf(got, sizeof got, "2^%.1f", bits);
      std::snprintf(expected, sizeof expected, "the modulus at level %d (2^%.1f)", r.state.level, modulus);
      const std::string op = to_string(node.op);
      throw StateError(label + ": " + op + ": the result's scale " + got + " does not fit " + expected +
                           ": rescale the operands first",
                       StateError::Mismatch{op, "scale", expected, got});
    }
  }
  std::size_t next_constant = 0;
  for (int arg : node.args) {
    if (values[static_cast<std::size_t>(arg)].kind != ValueKind::constant) continue;
    Slot& s = slot(arg);
    Plaintext& p = fixed_constants[next_constant++];
    if (!s.plaintext) {
      s.state = p.state;
      s.plaintext = std::move(p);
      s.first_use_label = label;
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    Slot& s = slot(node.results[i]);
    s.state = results[i].state;
    s.ciphertext = std::move(results[i]);
  }
}

}  // namespace fhelium::runtime::detail
