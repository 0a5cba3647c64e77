// Compiling a pipeline's steps into a Program: each step is builder calls or
// a circuit (fhelium/circuits/) on a builder bound to the context, which
// checks every node by the Engine's rules as it is added. This file adds only
// what a pipeline user needs on top: the step's location in the file, a fix
// in the pipeline's own terms for a state conflict, the depth a calculation
// needs when it runs out of levels, and the expected values (the clear
// evaluator on the same Program).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>

#include "fhelium/circuits/bootstrap.hpp"
#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/polynomial.hpp"
#include "fhelium/circuits/slots.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "fhelium/security.hpp"
#include "pipeline_internal.hpp"

namespace fhelium::runtime::pipeline_detail {
namespace {

// A bootstrap of a value that repeats with `period`: sparse slots when the
// period is below N/2 (the trace and one EvalMod), with at most
// log2(slots) levels for each special FFT; at full slots the real-only path
// (a pipeline's values are real: one EvalMod too). The step's options
// replace the defaults.
circuits::BootstrapConfig bootstrap_config(const Context& context, std::size_t period,
                                           const StepSpec::BootstrapOptions& options) {
  circuits::BootstrapConfig config;
  config.slots = std::max<std::size_t>(2, period);
  config.real_only = config.slots == context.ring_degree() / 2;
  const int log_slots = std::countr_zero(config.slots);
  config.coeff_to_slot_levels = std::min(options.coeff_to_slot_levels.value_or(config.coeff_to_slot_levels), log_slots);
  config.slot_to_coeff_levels = std::min(options.slot_to_coeff_levels.value_or(config.slot_to_coeff_levels), log_slots);
  config.double_angle = options.double_angle.value_or(config.double_angle);
  config.cosine_degree = options.cosine_degree.value_or(config.cosine_degree);
  config.message_ratio = options.message_ratio.value_or(config.message_ratio);
  config.arcsine_correction = options.arcsine_correction.value_or(config.arcsine_correction);
  config.horner_giants = options.horner_giants.value_or(config.horner_giants);
  return config;
}

// Levels added to the parameters to measure the depth of a calculation that
// runs out of levels.
constexpr int kProbeLevels = 24;

// A refusal inside a step; the compiler adds the step's location and name.
struct StepFailure {
  std::string reason;
};

[[noreturn]] void refuse(const std::string& reason) { throw StepFailure{reason}; }

std::string scale_text(double scale) {
  char buffer[64];
  const double bits = std::log2(scale);
  if (std::fabs(bits - std::round(bits)) < 1e-9) {
    std::snprintf(buffer, sizeof buffer, "2^%.0f", bits);
  } else {
    std::snprintf(buffer, sizeof buffer, "2^%.6f", bits);
  }
  return buffer;
}

std::string state_text(const ValueState& s) {
  return "level " + std::to_string(s.level) + ", scale " + scale_text(s.scale) +
         (s.domain == Domain::ntt ? "" : ", coefficient domain") +
         (s.components == 2 ? "" : ", " + std::to_string(s.components) + " components");
}

// `packed` repeated over every slot with period next_power_of_two(size), as the encoder lays it out.
Slots replicate(const std::vector<std::complex<double>>& packed, std::size_t slots) {
  const std::size_t p = next_power_of_two(packed.size());
  Slots out(slots);
  for (std::size_t j = 0; j < slots; ++j) {
    const std::size_t k = j % p;
    out[j] = k < packed.size() ? packed[k] : std::complex<double>(0);
  }
  return out;
}

class Compiler {
 public:
  // extra_primes > 0: a probe with that many more primes on top, every
  // explicit level moved up by the levels they add, to measure a depth.
  Compiler(const PipelineSpec& spec, int extra_primes) : spec_(spec), extra_primes_(extra_primes) {}

  Compiled run() {
    make_context();
    for (std::size_t i = 0; i < spec_.inputs.size(); ++i) add_input(i);
    for (std::size_t i = 0; i < spec_.steps.size(); ++i) compile_step(i);
    check_outputs();
    finish();
    return std::move(out_);
  }

  // After run() threw: whether a step failed on a state rule (perhaps a
  // depth problem), and which.
  std::optional<std::size_t> state_failure() const { return state_failure_; }

 private:
  // ---- setup ----

  void make_context() {
    CkksParameters params = spec_.params.parameters;
    if (extra_primes_ > 0) {
      params.q_bits.insert(params.q_bits.end(), static_cast<std::size_t>(extra_primes_), params.q_bits.back());
      params.allow_insecure = true;
    }
    try {
      ctx_ = Context::create(params);
    } catch (const SecurityError& e) {
      throw PipelineError(
          spec_.params.mark, "params",
          std::string(e.what()) + " (in a pipeline: params: {..., allow_insecure: true}, for testing only)");
    } catch (const Error& e) {
      throw PipelineError(spec_.params.mark, "params", e.what());
    }
    extra_ = ctx_->max_level() - spec_.params.parameters.max_level();
    out_.plan.context = ctx_;
    out_.builder = ProgramBuilder(ctx_, spec_.name);
    slots_ = static_cast<std::size_t>(ctx_->ring_degree() / 2);
  }

  ProgramBuilder& b() { return out_.builder; }

  void add_input(std::size_t i) {
    const InputSpec& in = spec_.inputs[i];
    std::vector<std::complex<double>> packed;
    std::size_t length = in.cols;
    if (in.is_matrix()) {
      const std::size_t stride = next_power_of_two(in.cols);
      length = in.rows * stride;
      packed.assign(length, 0.0);
      for (std::size_t r = 0; r < in.rows; ++r) {
        for (std::size_t c = 0; c < in.cols; ++c) packed[r * stride + c] = in.values[r * in.cols + c];
      }
    } else {
      packed.assign(in.values.begin(), in.values.end());
    }
    NamedValue v;
    v.input = static_cast<int>(i);
    v.encrypted = in.encrypted;
    v.length = length;
    v.period = next_power_of_two(length);
    if (next_power_of_two(packed.size()) <= slots_) v.clear = replicate(packed, slots_);  // else: a matvec matrix only
    out_.input_slots.push_back(v.clear);
    if (in.encrypted) {
      ValueState s;
      s.context_id = ctx_->id();
      s.word_size = ctx_->word_size();
      s.level = in.level ? *in.level + extra_ : ctx_->max_level();
      s.scale = in.scale.value_or(spec_.params.parameters.scale);
      s.domain = Domain::ntt;
      s.basis = Basis::Q;
      s.components = 2;
      double largest = 0;
      for (double value : in.values) largest = std::max(largest, std::fabs(value));
      const std::string problem = b().magnitude_problem(largest, s.scale, s.level);
      if (!problem.empty()) throw PipelineError(in.mark, in.key, "input '" + in.name + "': " + problem);
      try {
        v.ref = b().input(in.name, s);
      } catch (const Error& e) {
        throw PipelineError(in.mark, in.key, e.what());
      }
      labels_[v.ref.id] = "'" + in.name + "'";
      names_[v.ref.id] = in.name;
    }
    out_.named[in.name] = std::move(v);
  }

  // ---- explaining a state error in the pipeline's terms ----

  std::string label(ValueRef v) const {
    const auto found = labels_.find(v.id);
    return found != labels_.end() ? found->second : "an intermediate value of step '" + step().name + "'";
  }
  const StepSpec& step() const { return spec_.steps[step_]; }
  const std::string* name_of(ValueRef v) const {
    const auto found = names_.find(v.id);
    return found != names_.end() ? &found->second : nullptr;
  }

  // A state error of the current step in the pipeline's terms: the operand
  // by its name and the step that would fix it (the rule itself is the
  // Engine's, carried by StateError::Mismatch).
  std::string explain(const StateError& e) const {
    if (!e.mismatch() || operands_.empty()) return e.what();
    const StateError::Mismatch& m = *e.mismatch();
    const std::string& op = m.operation;
    const auto state = [&](ValueRef v) { return out_.builder.state(v); };
    if (m.field == "components" && operands_.size() >= 1) {
      if ((op == "add" || op == "sub" || op == "sum") && operands_.size() >= 2) {
        const ValueRef a = operands_[0], c = operands_[1];
        return op + ": operands " + label(a) + " (" + std::to_string(state(a).components) + " components) and " +
               label(c) + " (" + std::to_string(state(c).components) +
               " components) differ: relinearize the 3-component one first";
      }
      for (ValueRef v : operands_) {
        if (std::to_string(state(v).components) == m.expected) continue;
        if (m.expected == "3") {
          return op + " needs a 3-component ciphertext (the result of multiply) but " + label(v) + " has " +
                 std::to_string(state(v).components);
        }
        return op + " needs a " + m.expected + "-component ciphertext but " + label(v) + " has " +
               std::to_string(state(v).components) + " components" +
               (state(v).components == 3 ? " (multiplied, not relinearized): add a relinearize step first" : "");
      }
    }
    if (m.field == "domain") {
      if (op == "to_ntt") return "to_ntt: " + label(operands_[0]) + " is already in the ntt domain";
      if (m.expected == "ntt") {
        for (ValueRef v : operands_) {
          if (state(v).domain == Domain::ntt) continue;
          return op + " needs the ntt domain but " + label(v) +
                 " is in the coefficient domain: add a to_ntt step first";
        }
      }
      if (operands_.size() >= 2) {
        return op + ": operands " + label(operands_[0]) + " and " + label(operands_[1]) +
               " are in different domains: convert one with to_ntt or to_coefficient";
      }
    }
    if (m.field == "level" && m.expected == "equal levels" && operands_.size() >= 2) {
      const ValueRef a = operands_[0], c = operands_[1];
      const bool a_higher = state(a).level > state(c).level;
      const ValueRef high = a_higher ? a : c, low = a_higher ? c : a;
      std::string fix = ": bring them to one level with drop_to_level";
      if (const std::string* n = name_of(high)) {
        const std::string level = std::to_string(state(low).level - extra_);
        const std::string dropped = *n + "_" + level;
        fix = ": add a step {name: " + dropped + ", op: drop_to_level, args: [" + *n + "], level: " + level +
              "} and use " + dropped;
      }
      return op + ": operands " + label(a) + " (" + state_text(state(a)) + ") and " + label(c) + " (" +
             state_text(state(c)) + ") are at different levels" + fix;
    }
    if (m.field == "level" && op == "drop_to_level" && state(operands_[0]).level < std::stoi(m.got)) {
      return "drop_to_level: " + label(operands_[0]) + " is at level " + std::to_string(state(operands_[0]).level) +
             ", it cannot be raised to level " + m.got + " (levels only go down)";
    }
    if (m.field == "scale" && m.expected == "equal scales" && operands_.size() >= 2) {
      const ValueRef a = operands_[0], c = operands_[1];
      std::string fix = ": compute them at one scale";
      const std::string *an = name_of(a), *cn = name_of(c);
      if (an && cn) {
        fix = ": add a step {name: " + *an + "_aligned, op: align, args: [" + *an + "], to: " + *cn +
              "} (it uses one level, so align the higher operand before " + *cn + " is computed) and use it";
      }
      return op + ": operands " + label(a) + " (" + state_text(state(a)) + ") and " + label(c) + " (" +
             state_text(state(c)) + ") have different scales" + fix;
    }
    if (m.field == "scale") {
      return op + ": the result's scale " + m.got + " does not fit " + m.expected + ": rescale the operands first";
    }
    return e.what();
  }

  // ---- steps ----

  const NamedValue& arg(const StepSpec& s, std::size_t j) {
    const auto it = out_.named.find(s.args[j]);
    if (it == out_.named.end()) {
      std::vector<std::string> defined;
      for (const auto& [name, v] : out_.named) defined.push_back(name);
      std::string known = known_list(defined, s.args[j]);
      known = known.substr(1, known.size() - 2);  // without the parentheses
      const SourceMark mark = j < s.arg_marks.size() ? s.arg_marks[j] : s.mark;
      throw PipelineError(
          mark, s.key + ".args[" + std::to_string(j) + "]",
          "undefined value '" + s.args[j] + "': define it in inputs or in an earlier step (" + known + ")");
    }
    return it->second;
  }

  // A ciphertext operand of the step.
  ValueRef ct(const NamedValue& v, const std::string& name, const std::string& op) {
    if (!v.encrypted) {
      refuse("'" + name + "' is a plaintext input, but " + op +
             " needs a ciphertext here: set encrypted: true on input '" + name +
             "', or use it as the second operand of add, sub, multiply_plain or inner_product");
    }
    operands_.push_back(v.ref);
    return v.ref;
  }

  // A plaintext operand's slots.
  const Slots& plain(const NamedValue& v, const std::string& name) {
    if (v.clear.size() != slots_) {
      refuse("plaintext '" + name + "' does not fit the " + std::to_string(slots_) + " slots when packed row by row");
    }
    return v.clear;
  }

  ValueRef constant(const Slots& values, double scale) { return b().constant(b().fresh_name("__c"), values, scale); }

  double prime(int level) const { return ctx_->rescale_divisor(level); }

  static NamedValue elementwise(const NamedValue& a, const NamedValue& c) {
    NamedValue r;
    r.length = std::max(a.length, c.length);
    r.period = std::max(a.period, c.period);
    return r;
  }

  void compile_step(std::size_t index) {
    const StepSpec& s = spec_.steps[index];
    step_ = index;
    operands_.clear();
    const std::size_t begin = b().node_count();
    std::vector<const NamedValue*> a;
    for (std::size_t j = 0; j < s.args.size(); ++j) a.push_back(&arg(s, j));
    const std::string where = "step '" + s.name + "' (" + s.op + "): ";
    std::vector<std::pair<std::string, NamedValue>> results;
    try {
      results = dispatch(s, a);
      for (auto& [name, v] : results) {
        v.step = static_cast<int>(index);
        v.input = -1;
        v.encrypted = true;
        // A step's result is its own value: a copy when the step returned an existing one.
        if (names_.count(v.ref.id) != 0) {
          v.ref = b().drop_to_level(v.ref, b().state(v.ref).level);
        }
        b().name(v.ref, name);
      }
    } catch (const StepFailure& f) {
      throw PipelineError(s.mark, s.key, where + f.reason);
    } catch (const StateError& e) {
      state_failure_ = index;
      throw PipelineError(s.mark, s.key, where + explain(e));
    } catch (const Error& e) {
      throw PipelineError(s.mark, s.key, where + e.what());
    }
    std::vector<std::string> names;
    for (auto& [name, v] : results) {
      names_[v.ref.id] = name;
      labels_[v.ref.id] = "'" + name + "'";
      names.push_back(name);
      out_.named[name] = std::move(v);
    }
    out_.step_nodes.emplace_back(begin, b().node_count());
    out_.step_results.push_back(std::move(names));
  }

  std::vector<std::pair<std::string, NamedValue>> dispatch(const StepSpec& s, const std::vector<const NamedValue*>& a) {
    const std::string& op = s.op;
    const auto one = [&](NamedValue v) {
      return std::vector<std::pair<std::string, NamedValue>>{{s.name, std::move(v)}};
    };
    const auto unary = [&](ValueRef ref) {
      NamedValue r;
      r.ref = ref;
      r.length = a[0]->length;
      r.period = a[0]->period;
      return one(std::move(r));
    };
    const auto x = [&] { return ct(*a[0], s.args[0], op); };
    if (op == "add" || op == "sub") {
      const bool is_add = op == "add";
      NamedValue r = elementwise(*a[0], *a[1]);
      if (!a[0]->encrypted && !a[1]->encrypted) {
        refuse("both operands are plaintext inputs; at least one must be encrypted");
      }
      if (a[0]->encrypted && a[1]->encrypted) {
        const ValueRef p = ct(*a[0], s.args[0], op), q = ct(*a[1], s.args[1], op);
        r.ref = is_add ? b().add(p, q) : b().sub(p, q);
      } else if (a[0]->encrypted) {
        const ValueRef p = ct(*a[0], s.args[0], op);
        const ValueRef c = constant(plain(*a[1], s.args[1]), b().state(p).scale);
        r.ref = is_add ? b().add(p, c) : b().sub(p, c);
      } else {
        const ValueRef q = ct(*a[1], s.args[1], op);
        const ValueRef c = constant(plain(*a[0], s.args[0]), b().state(q).scale);
        r.ref = is_add ? b().add(q, c) : b().negate(b().sub(q, c));  // plain - ct = -(ct - plain)
      }
      return one(std::move(r));
    }
    if (op == "negate") return unary(b().negate(x()));
    if (op == "add_scalar") return unary(b().add_scalar(x(), s.value));
    if (op == "sub_scalar") return unary(b().sub_scalar(x(), s.value));
    if (op == "multiply" || op == "multiply_relinearize_rescale") {
      const ValueRef p = x();
      if (!a[1]->encrypted) {
        refuse("'" + s.args[1] + "' is a plaintext input: use multiply_plain to multiply by a plaintext");
      }
      const ValueRef q = ct(*a[1], s.args[1], op);
      NamedValue r = elementwise(*a[0], *a[1]);
      r.ref = op == "multiply" ? b().multiply(p, q) : b().multiply_relinearize_rescale(p, q);
      return one(std::move(r));
    }
    if (op == "relinearize") return unary(b().relinearize(x()));
    if (op == "multiply_plain") {
      const ValueRef p = x();
      if (a[1]->encrypted) {
        refuse("'" + s.args[1] + "' is encrypted: use multiply (or multiply_relinearize_rescale) for two ciphertexts");
      }
      NamedValue r = elementwise(*a[0], *a[1]);
      const double scale = s.plain_scale.value_or(prime(b().state(p).level));
      r.ref = b().multiply_plain(p, constant(plain(*a[1], s.args[1]), scale));
      return one(std::move(r));
    }
    if (op == "multiply_scalar") {
      const ValueRef p = x();
      return unary(b().multiply_scalar(p, s.value, s.scalar_scale.value_or(prime(b().state(p).level))));
    }
    if (op == "multiply_integer") return unary(b().multiply_integer(x(), s.integer));
    if (op == "rescale") return unary(b().rescale(x()));
    if (op == "drop_to_level") return unary(b().drop_to_level(x(), s.level + extra_));
    if (op == "rotate") return unary(b().rotate(x(), s.step));
    if (op == "conjugate") return unary(b().conjugate(x()));
    if (op == "rotate_hoisted") {
      const auto refs = b().rotate_hoisted(x(), s.steps);
      std::vector<std::pair<std::string, NamedValue>> out;
      for (std::size_t i = 0; i < refs.size(); ++i) {
        NamedValue r;
        r.ref = refs[i];
        r.length = a[0]->length;
        r.period = a[0]->period;
        out.emplace_back(s.result_names[i], std::move(r));
      }
      return out;
    }
    if (op == "to_ntt") return unary(b().to_ntt(x()));
    if (op == "to_coefficient") return unary(b().to_coefficient(x()));
    if (op == "sum") {
      std::vector<ValueRef> refs;
      NamedValue r = *a[0];
      for (std::size_t j = 0; j < a.size(); ++j) {
        refs.push_back(ct(*a[j], s.args[j], op));
        r = elementwise(r, *a[j]);
      }
      r.ref = refs.size() == 1 ? refs[0] : b().sum(refs);
      return one(std::move(r));
    }
    if (op == "matvec") return one(matvec(s, *a[0], x()));
    if (op == "polynomial") {
      circuits::Polynomial p;
      p.coefficients = s.coefficients;
      return unary(circuits::evaluate_polynomial(b(), x(), p));
    }
    if (op == "inner_product" || op == "sum_slots") {
      const ValueRef p = x();
      NamedValue r = op == "sum_slots" ? *a[0] : elementwise(*a[0], *a[1]);
      const std::size_t width = s.width.value_or(r.period);
      if (op == "sum_slots") {
        r.ref = circuits::sum_slots(b(), p, width);
      } else if (a[1]->encrypted) {
        r.ref = circuits::inner_product(b(), p, ct(*a[1], s.args[1], op), width);
      } else {
        r.ref = circuits::inner_product(b(), p, plain(*a[1], s.args[1]), width, b().fresh_name("__c"));
      }
      if (width >= r.period) {
        r.length = 1;
        r.period = 1;
      }
      return one(std::move(r));
    }
    if (op == "bootstrap")
      return unary(circuits::bootstrap(b(), x(), bootstrap_config(*b().context(), a[0]->period, s.bootstrap)));
    if (op == "align") {
      const ValueRef p = x();
      const auto it = out_.named.find(s.to);
      if (it == out_.named.end() || !it->second.encrypted) {
        std::vector<std::string> defined;
        for (const auto& [name, v] : out_.named) {
          if (v.encrypted) defined.push_back(name);
        }
        refuse("'to: " + s.to + "' is not an encrypted value defined before this step " + known_list(defined, s.to));
      }
      const ValueState target = b().state(it->second.ref);
      const ValueState& from = b().state(p);
      if (from.level < target.level || (!same_scale(from.scale, target.scale) && from.level < target.level + 1)) {
        refuse("align: " + label(p) + " is at level " + std::to_string(from.level) + "; reaching " +
               label(it->second.ref) + " (" + state_text(target) + ") needs level " + std::to_string(target.level + 1) +
               " or higher (one level is used to set the scale)");
      }
      return unary(circuits::align(b(), p, target.level, target.scale));
    }
    refuse("unknown operation '" + op + "'");
  }

  std::vector<std::vector<double>> matrix_of(const StepSpec& s) {
    if (s.matrix_input.empty()) return s.matrix;
    const auto it = out_.named.find(s.matrix_input);
    if (it == out_.named.end() || it->second.input < 0) {
      std::vector<std::string> inputs;
      for (const auto& in : spec_.inputs) inputs.push_back(in.name);
      refuse("matrix '" + s.matrix_input + "' is not an input " + known_list(inputs, s.matrix_input));
    }
    const InputSpec& in = spec_.inputs[static_cast<std::size_t>(it->second.input)];
    if (in.encrypted) {
      refuse("matrix '" + in.name +
             "' is encrypted; matvec multiplies by a plaintext matrix: set encrypted: false on it");
    }
    if (!in.is_matrix()) {
      refuse("matrix '" + in.name + "' is a vector of " + std::to_string(in.cols) +
             " values; give a matrix (a list of rows, or a file with several rows and columns)");
    }
    std::vector<std::vector<double>> m(in.rows);
    for (std::size_t r = 0; r < in.rows; ++r) {
      m[r].assign(in.values.begin() + static_cast<long>(r * in.cols),
                  in.values.begin() + static_cast<long>((r + 1) * in.cols));
    }
    return m;
  }

  NamedValue matvec(const StepSpec& s, const NamedValue& x, ValueRef xi) {
    const auto m = matrix_of(s);
    const std::size_t rows = m.size();
    const std::size_t cols = m[0].size();
    if (x.length != cols) {
      refuse("matrix is " + std::to_string(rows) + "x" + std::to_string(cols) + " but '" + s.args[0] + "' has " +
             std::to_string(x.length) + " values: the matrix needs one column per value");
    }
    if (next_power_of_two(cols) != x.period) {
      refuse("'" + s.args[0] + "' repeats every " + std::to_string(x.period) + " slots, but a matrix with " +
             std::to_string(cols) + " columns needs a period of " + std::to_string(next_power_of_two(cols)));
    }
    if (next_power_of_two(rows) > slots_) {
      refuse("matrix has " + std::to_string(rows) + " rows but the parameters give " + std::to_string(slots_) +
             " slots");
    }
    bool zero = true;
    for (const auto& row : m) zero = zero && std::all_of(row.begin(), row.end(), [](double v) { return v == 0.0; });
    if (zero) refuse("the matrix is all zeros");
    circuits::LinearTransform lt = circuits::LinearTransform::from_matrix(m, slots_);
    // The diagonal method: every rotation hoisted, no giant step.
    if (!s.matvec_bsgs) lt = lt.with_baby_step(static_cast<long>(lt.input_period()));
    NamedValue r;
    r.ref = lt.apply(b(), xi, "__" + s.name);
    r.length = rows;
    r.period = lt.output_period();
    return r;
  }

  // ---- outputs and the plan ----

  void check_outputs() {
    for (const OutputSpec& o : spec_.outputs) {
      const auto it = out_.named.find(o.value);
      if (it == out_.named.end()) {
        std::vector<std::string> defined;
        for (const auto& [name, v] : out_.named) defined.push_back(name);
        throw PipelineError(o.mark, o.key, "undefined value '" + o.value + "' " + known_list(defined, o.value));
      }
      if (!it->second.encrypted) {
        throw PipelineError(o.mark, o.key,
                            "'" + o.value + "' is a plaintext input: only encrypted values are decrypted");
      }
      const std::size_t count = o.count.value_or(it->second.length);
      if ((count - 1) * o.stride >= slots_) {
        throw PipelineError(o.mark, o.key,
                            "count " + std::to_string(count) + " with stride " + std::to_string(o.stride) +
                                " reaches slot " + std::to_string((count - 1) * o.stride) + ", beyond the " +
                                std::to_string(slots_) + " slots");
      }
    }
  }

  // States of the step results, keys, depth, and the expected values.
  void finish() {
    PipelinePlan& plan = out_.plan;
    const ProgramBuilder& builder = out_.builder;
    for (std::size_t i = 0; i < spec_.steps.size(); ++i) {
      const StepSpec& s = spec_.steps[i];
      const NamedValue& v = out_.named.at(out_.step_results[i].front());
      const ValueState& state = builder.state(v.ref);
      PlannedStep p;
      p.name = s.name;
      p.op = s.op;
      p.level = state.level;
      p.scale = state.scale;
      p.domain = state.domain;
      p.components = state.components;
      p.operations = out_.step_nodes[i].second - out_.step_nodes[i].first;
      p.length = v.length;
      plan.steps.push_back(p);
    }
    plan.operations = builder.node_count();
    const Program& program = builder.program();
    int lowest = ctx_->max_level();
    for (std::size_t id = 0; id < program.values().size(); ++id) {
      if (program.values()[id].kind != ValueKind::constant) {
        lowest = std::min(lowest, builder.state({static_cast<int>(id)}).level);
      }
    }
    plan.depth = ctx_->max_level() - lowest;
    const KeyRequirements keys = builder.required_keys();
    plan.keys = keys;

    std::map<std::string, Slots> inputs;
    for (const auto& [name, v] : out_.named) {
      if (v.input >= 0 && v.encrypted) inputs[name] = v.clear;
    }
    const std::vector<Slots> clear = evaluate_clear_values(program, inputs, builder.constant_values(), slots_);
    for (auto& [name, v] : out_.named) {
      if (v.ref.id >= 0) v.clear = clear[static_cast<std::size_t>(v.ref.id)];
    }
  }

  const PipelineSpec& spec_;
  int extra_primes_ = 0;
  int extra_ = 0;  // levels the extra primes add (4 primes carry 3 levels in the 32-bit family)
  std::shared_ptr<const Context> ctx_;
  Compiled out_;
  std::size_t slots_ = 0;
  std::size_t step_ = 0;
  std::vector<ValueRef> operands_;     // the current step's ciphertext operands
  std::map<int, std::string> names_;   // value id -> input or step result name
  std::map<int, std::string> labels_;  // value id -> "'name'" for inputs and step results
  std::optional<std::size_t> state_failure_;
};

// The message for a calculation deeper than the parameters.
[[noreturn]] void throw_depth_error(const PipelineSpec& spec, std::size_t step_index, int need) {
  const int have = spec.params.parameters.max_level();
  const bool small_words = spec.params.parameters.word_size == WordSize::bits32;
  // The 32-bit family's chain carries 3 levels on 4 more primes.
  const int more = small_words ? 4 * ((need - have + 2) / 3) : need - have;
  const StepSpec& s = spec.steps[step_index];
  std::string suggestion;
  for (const auto& name : preset_names()) {
    const CkksParameters p = preset(name);
    if (p.max_level() >= need && p.log_ring_degree >= spec.params.parameters.log_ring_degree &&
        p.word_size == spec.params.parameters.word_size) {
      if (suggestion.empty() || p.log_ring_degree < preset(suggestion).log_ring_degree) suggestion = name;
    }
  }
  throw PipelineError(s.mark, s.key,
                      "step '" + s.name + "' (" + s.op + ") goes below level 0: the calculation needs depth " +
                          std::to_string(need) + " but the parameters give " + std::to_string(have) + " levels; add " +
                          std::to_string(more) + " prime" + (more == 1 ? "" : "s") + " to params.q_bits" +
                          (suggestion.empty() ? std::string() : " or use the preset " + suggestion) +
                          (s.op == "polynomial" ? ", or lower the polynomial's degree" : ""));
}

}  // namespace

Compiled compile_pipeline(const PipelineSpec& spec) {
  Compiler compiler(spec, 0);
  std::exception_ptr first;
  try {
    return compiler.run();
  } catch (const PipelineError&) {
    if (!compiler.state_failure()) throw;
    first = std::current_exception();
  }
  // A state error may be a calculation that runs out of levels: the same
  // pipeline with more levels tells, and measures the depth it needs.
  int need = 0;
  try {
    need = Compiler(spec, kProbeLevels).run().plan.depth;
  } catch (const Error&) {
    std::rethrow_exception(first);  // not (only) a matter of depth: the first error stands
  }
  if (need <= spec.params.parameters.max_level()) std::rethrow_exception(first);
  throw_depth_error(spec, *compiler.state_failure(), need);
}

}  // namespace fhelium::runtime::pipeline_detail

namespace fhelium::runtime {

PipelinePlan plan_pipeline(const PipelineSpec& spec) { return pipeline_detail::compile_pipeline(spec).plan; }

}  // namespace fhelium::runtime
