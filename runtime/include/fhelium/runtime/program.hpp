// A Program: a backend-neutral, typed graph of CKKS operations over named
// inputs, plaintext constants and outputs. Built with ProgramBuilder (or
// parsed from its text form), specialized to input states with prepare(),
// then linked to an Engine and its materials (keys, constants) as an
// Executable whose run() is an ordinary callable.
//
//   ProgramBuilder b("matvec");
//   auto x = b.input("x");
//   auto d0 = b.constant("d0");
//   auto y = b.multiply_plain(b.rotate(x, 1), d0);
//   b.output("y", b.rescale(y));
//   Program p = b.build();
//   PreparedProgram prepared = p.prepare(context, {{"x", x_state}});
//   KeyRequirements keys = prepared.required_keys();
//   Executable exe = link(prepared, engine, materials);
//   ValueTree out = exe.run(ValueTree(ValueTree::Map{{"x", ciphertext}}));
//
// A builder bound to a context knows every value's state as it is built (the
// Engine's rules, checked node by node); circuits (fhelium/circuits/) use
// state(ref) to encode constants at the level and scale where they are used:
//
//   ProgramBuilder b(context, "poly");
//   auto x = b.input("x", x_state);
//   auto y = b.rescale(b.multiply_scalar(x, 0.5, b.state(x).scale));
//   PreparedProgram prepared = b.prepare();
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/runtime/value_tree.hpp"
#include "fhelium/value.hpp"

namespace fhelium::runtime {

namespace detail {
class StateTracker;
}

using Slots = std::vector<std::complex<double>>;

// Every Engine operation a Program can hold.
enum class OpKind {
  add,  // ciphertext + ciphertext, or ciphertext + plaintext constant
  sub,  // likewise
  negate,
  add_scalar,  // `scalar`
  sub_scalar,  // `scalar`
  multiply,    // ciphertext x ciphertext -> 3 components
  relinearize,
  multiply_plain,
  multiply_scalar,   // `scalar`, `scalar_scale`
  multiply_integer,  // `integer`
  rescale,
  drop_to_level,  // `level`
  rotate,         // `step`
  conjugate,
  rotate_hoisted,  // `steps`: one result per step
  to_ntt,
  to_coefficient,
  sum,  // any number of arguments
  multiply_relinearize_rescale,
  mod_raise,  // bootstrapping's ModRaise: level 0 -> the top level
  // ModRaise under the sparse-secret encapsulation: switch to the ephemeral
  // sparse secret (at q_0 p_0), ModRaise, switch back (Materials::sparse_encapsulation).
  mod_raise_encapsulated,
  // x_0 c_0 + x_1 c_1 + ...: arguments alternate ciphertext and plaintext
  // constant (one backend pass where the backend fuses it).
  multiply_plain_sum,
  // rotate(x_0, steps_0) + rotate(x_1, steps_1) + ... with one ModDown
  // (Engine::rotate_sum: its own residues; only on a backend that has it).
  rotate_sum,
};

const char* to_string(OpKind op);
// Throws InvalidArgumentError naming the unknown operation and the known ones.
OpKind op_kind_from_string(const std::string& name);

// A reference to a value inside a program under construction.
struct ValueRef {
  int id = -1;
};

struct Node {
  OpKind op = OpKind::add;
  std::vector<int> args;        // value ids (inputs, constants or earlier results)
  std::vector<int> results;     // value ids defined by this node (several for rotate_hoisted)
  double scalar = 0.0;
  double scalar_scale = 0.0;
  std::int64_t integer = 0;
  int level = 0;
  long step = 0;
  std::vector<long> steps;
};

enum class ValueKind { input, constant, result };

struct ValueInfo {
  std::string name;  // unique within the program
  ValueKind kind = ValueKind::result;
  std::optional<double> constant_scale;  // constants: encoding scale (default: the context's scale)
};

// What a prepared program needs to run.
struct KeyRequirements {
  bool relinearization = false;
  bool conjugation = false;
  bool sparse_encapsulation = false;  // mod_raise_encapsulated
  std::set<long> rotation_steps;  // as written (also the hoisted ones)
  std::set<std::uint32_t> galois_elements(const Context& context) const;
};

class PreparedProgram;

class Program {
 public:
  const std::string& name() const { return name_; }
  const std::vector<ValueInfo>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // Output name -> value id, in declaration order.
  const std::vector<std::pair<std::string, int>>& outputs() const { return outputs_; }
  std::vector<std::string> input_names() const;
  std::vector<std::string> constant_names() const;

  // The text form (one declaration or operation per line); parse(print(p)) == p.
  std::string print() const;
  // Throws InvalidArgumentError with the line number and the offending token.
  static Program parse(const std::string& text);

  // Specializes to the states of the inputs: checks every operation's state
  // transition (by running the Engine's own validation on state only) and
  // throws the first illegal one as StateError / InvalidArgumentError whose
  // message starts with the failing value's name and operation.
  PreparedProgram prepare(std::shared_ptr<const Context> context,
                          const std::map<std::string, ValueState>& input_states) const;
  // Single-input convenience: every input takes the prototype's state.
  PreparedProgram prepare(std::shared_ptr<const Context> context, const ValueState& prototype) const;

  bool operator==(const Program&) const;

 private:
  friend class ProgramBuilder;
  std::string name_;
  std::vector<ValueInfo> values_;
  std::vector<Node> nodes_;
  std::vector<std::pair<std::string, int>> outputs_;
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name = "program");
  // Bound to a context: every node is checked by the Engine's rules as it is
  // added (the error names the node and the tag), and state() gives the state
  // of every value. A node that fails is not added; the builder stays usable.
  ProgramBuilder(std::shared_ptr<const Context> context, std::string name = "program");
  ProgramBuilder(ProgramBuilder&&) noexcept;
  ProgramBuilder& operator=(ProgramBuilder&&) noexcept;
  ~ProgramBuilder();

  ValueRef input(const std::string& name);
  // Bound builders: an input with its state (a ciphertext of the context).
  ValueRef input(const std::string& name, const ValueState& state);
  // A plaintext constant bound at link time (encoded at the level where it is
  // first used, at `scale` or the context's scale).
  ValueRef constant(const std::string& name, std::optional<double> scale = std::nullopt);
  // A constant whose slot values the builder keeps (constant_values()): for
  // Materials::constants and the clear evaluator.
  ValueRef constant(const std::string& name, Slots values, std::optional<double> scale = std::nullopt);
  const std::map<std::string, Slots>& constant_values() const { return constant_values_; }
  void output(const std::string& name, ValueRef value);

  ValueRef add(ValueRef a, ValueRef b);   // b: ciphertext or constant
  ValueRef sub(ValueRef a, ValueRef b);
  ValueRef negate(ValueRef a);
  ValueRef add_scalar(ValueRef a, double value);
  ValueRef sub_scalar(ValueRef a, double value);
  ValueRef multiply(ValueRef a, ValueRef b);
  ValueRef relinearize(ValueRef a);
  ValueRef multiply_plain(ValueRef a, ValueRef constant);
  ValueRef multiply_scalar(ValueRef a, double value, double scalar_scale);
  ValueRef multiply_integer(ValueRef a, std::int64_t value);
  ValueRef rescale(ValueRef a);
  ValueRef drop_to_level(ValueRef a, int level);
  ValueRef rotate(ValueRef a, long step);
  ValueRef conjugate(ValueRef a);
  std::vector<ValueRef> rotate_hoisted(ValueRef a, const std::vector<long>& steps);
  ValueRef to_ntt(ValueRef a);
  ValueRef to_coefficient(ValueRef a);
  ValueRef sum(const std::vector<ValueRef>& values);
  // Sum of values[i] x constants[i]: a linear transform's diagonals.
  ValueRef multiply_plain_sum(const std::vector<ValueRef>& values, const std::vector<ValueRef>& constants);
  // Sum of values[i] rotated by steps[i], one ModDown (Engine::rotate_sum).
  ValueRef rotate_sum(const std::vector<ValueRef>& values, const std::vector<long>& steps);
  ValueRef multiply_relinearize_rescale(ValueRef a, ValueRef b);
  ValueRef mod_raise(ValueRef a);
  ValueRef mod_raise_encapsulated(ValueRef a);
  // Names a result (results get generated names "%N" otherwise). Names are
  // unique within the program and are single text tokens: printable ASCII
  // without spaces, ',', '=' or '#'.
  void name(ValueRef value, const std::string& name);

  // Throws InvalidArgumentError when no output was declared.
  Program build() const;

  // ---- bound builders only (InvalidArgumentError otherwise) ----
  const std::shared_ptr<const Context>& context() const;
  // The value's state as the Engine will compute it. A constant's level is
  // the top level until its first use fixes it.
  const ValueState& state(ValueRef value) const;
  // Prefix for the errors of the nodes added from now on (for example a YAML
  // step's "file:line:column: step 'p'"); empty for none.
  void tag(std::string tag) { tag_ = std::move(tag); }
  // The program with every state already known (as build().prepare(...)).
  PreparedProgram prepare() const;
  // The program so far (perhaps without outputs yet) and the keys its nodes use.
  const Program& program() const { return program_; }
  std::size_t node_count() const { return program_.nodes_.size(); }
  KeyRequirements required_keys() const;
  // Empty when values up to `largest` in magnitude, encoded at `scale`, fit
  // the modulus at `level`; otherwise why not (the constants of every node
  // are checked so; callers check their inputs' values with it).
  std::string magnitude_problem(double largest, double scale, int level) const;
  // A name not yet used in the program, starting with `prefix`.
  std::string fresh_name(const std::string& prefix) const;

 private:
  ValueRef result_of(Node node);
  std::vector<ValueRef> results_of(Node node, std::size_t count);
  int declare(const std::string& name, ValueKind kind, std::optional<double> constant_scale);
  void check_arg(const char* op, ValueRef value, bool constant_allowed) const;
  detail::StateTracker& tracker(const char* what) const;
  void check_constants_fit(const Node& node) const;
  Program program_;
  std::map<std::string, int> names_;  // value name -> id
  int generated_ = 0;                 // next "%N" candidate
  std::unique_ptr<detail::StateTracker> tracker_;
  std::map<std::string, Slots> constant_values_;
  std::string tag_;
};

// A program with the state of every value known.
class PreparedProgram {
 public:
  const Program& program() const { return program_; }
  const std::shared_ptr<const Context>& context() const { return context_; }
  const ValueState& state(int value_id) const { return states_.at(static_cast<std::size_t>(value_id)); }
  const ValueState& state(const std::string& name) const;
  KeyRequirements required_keys() const { return keys_; }
  // The state each constant must be encoded at.
  std::map<std::string, ValueState> constant_states() const;
  // Per value name: its state, one line each, in program order.
  std::string describe() const;

 private:
  friend class Program;
  friend class ProgramBuilder;
  Program program_;
  std::shared_ptr<const Context> context_;
  std::vector<ValueState> states_;
  KeyRequirements keys_;
};

// Keys and constants bound to an Executable. A constant is an encoded
// Plaintext (its state must equal the prepared one) or clear slot values
// (encoded at link time at the prepared state).
// The sparse-secret encapsulation on a backend: an Engine of the low context
// (q_0 and the first special prime, on the same backend) and the two
// switching keys (upload_sparse_encapsulation in evaluation_keys.hpp makes one
// from SparseEncapsulationKeys).
struct SparseEncapsulation {
  std::shared_ptr<const Engine> low_engine;
  SwitchKey dense_to_sparse;  // of low_engine's context
  SwitchKey sparse_to_dense;  // of the main context
};

struct Materials {
  const RelinKey* relinearization_key = nullptr;  // borrowed; must outlive the Executable
  const GaloisKeys* galois_keys = nullptr;        // borrowed
  const SparseEncapsulation* sparse_encapsulation = nullptr;  // borrowed
  std::map<std::string, std::variant<Plaintext, std::vector<std::complex<double>>>> constants;
};

class Executable {
 public:
  // Inputs: a map tree with one ciphertext per program input (states equal
  // to the prepared ones, else StateError naming the input and field).
  // Returns a map tree with one entry per output.
  ValueTree run(const ValueTree& inputs) const;
  ValueTree operator()(const ValueTree& inputs) const { return run(inputs); }
  // The same, calling `observer(k)` after node k (Program::nodes()) was
  // issued to the backend: per-node or per-step timing (synchronize the
  // backend inside the observer), tracing. An error names the node.
  using NodeObserver = std::function<void(std::size_t node)>;
  ValueTree run(const ValueTree& inputs, const NodeObserver& observer) const;
  const PreparedProgram& prepared() const { return prepared_; }

 private:
  friend Executable link(const PreparedProgram&, const Engine&, const Materials&);
  PreparedProgram prepared_;
  const Engine* engine_ = nullptr;
  const RelinKey* relinearization_key_ = nullptr;
  const GaloisKeys* galois_keys_ = nullptr;
  const SparseEncapsulation* sparse_encapsulation_ = nullptr;
  std::map<int, Plaintext> constants_;  // by value id
};

// Checks the keys (MissingKeyError naming every missing one) and constants
// (InvalidArgumentError / StateError naming each), encodes clear constants.
// The engine is borrowed and must outlive the Executable.
Executable link(const PreparedProgram& prepared, const Engine& engine, const Materials& materials);

}  // namespace fhelium::runtime
