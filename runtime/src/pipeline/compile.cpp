// Compiling a pipeline's steps into Engine operations with the state of every
// value tracked (the Engine's own rules), composite steps expanded, the keys
// derived, and the same calculation done in double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "fhelium/error.hpp"
#include "fhelium/security.hpp"
#include "pipeline_internal.hpp"

namespace fhelium::runtime::pipeline_detail {
namespace {

// A refusal inside a step; the compiler adds the step's location and name.
struct StepFailure {
  std::string reason;
};

[[noreturn]] void refuse(const std::string& reason) { throw StepFailure{reason}; }

bool same_scale(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

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

std::string state_text(const IrState& s) {
  return "level " + std::to_string(s.level) + ", scale " + scale_text(s.scale) +
         (s.domain == Domain::ntt ? "" : ", coefficient domain") +
         (s.components == 2 ? "" : ", " + std::to_string(s.components) + " components");
}

// ---- the clear calculation on every slot ----

Slots rotated(const Slots& v, long step) {
  const long n = static_cast<long>(v.size());
  const long s = ((step % n) + n) % n;
  Slots out(v.size());
  for (long j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = v[static_cast<std::size_t>((j + s) % n)];
  return out;
}

Slots summed_slots(Slots v, std::size_t width) {
  for (std::size_t s = 1; s < width; s *= 2) {
    const Slots r = rotated(v, static_cast<long>(s));
    for (std::size_t j = 0; j < v.size(); ++j) v[j] += r[j];
  }
  return v;
}

template <class F>
Slots zip(const Slots& a, const Slots& b, F f) {
  Slots out(a.size());
  for (std::size_t j = 0; j < a.size(); ++j) out[j] = f(a[j], b[j]);
  return out;
}

template <class F>
Slots map(const Slots& a, F f) {
  Slots out(a.size());
  for (std::size_t j = 0; j < a.size(); ++j) out[j] = f(a[j]);
  return out;
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

struct Target {
  int level;
  double scale;
};

// A polynomial part: a ciphertext value, or a constant when ir < 0.
struct PolyVal {
  int ir = -1;
  double constant = 0;
};

class Compiler {
 public:
  explicit Compiler(const PipelineSpec& spec) : spec_(spec) {}

  Compiled run() {
    make_context();
    for (std::size_t i = 0; i < spec_.inputs.size(); ++i) add_input(i);
    try {
      for (std::size_t i = 0; i < spec_.steps.size(); ++i) compile_step(i);
    } catch (const PipelineError&) {
      if (depth_error_) throw_depth_error();
      throw;
    }
    if (depth_error_) throw_depth_error();
    check_outputs();
    finish_plan();
    return std::move(out_);
  }

 private:
  // ---- setup ----

  void make_context() {
    try {
      ctx_ = Context::create(spec_.params.parameters);
    } catch (const SecurityError& e) {
      throw PipelineError(
          spec_.params.mark, "params",
          std::string(e.what()) + " (in a pipeline: params: {..., allow_insecure: true}, for testing only)");
    } catch (const Error& e) {
      throw PipelineError(spec_.params.mark, "params", e.what());
    }
    out_.plan.context = ctx_;
    slots_ = static_cast<std::size_t>(ctx_->ring_degree() / 2);
    min_level_ = ctx_->max_level();
    double sum = 0;
    for (const auto& q : ctx_->q()) {
      sum += std::log2(static_cast<double>(q.value));
      log_q_.push_back(sum);
    }
  }

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
      IrState s;
      s.level = in.level.value_or(ctx_->max_level());
      s.scale = in.scale.value_or(spec_.params.parameters.scale);
      v.ir = new_value(s, ValueKind::input, in.name);
      out_.values[static_cast<std::size_t>(v.ir)].input = static_cast<int>(i);
      out_.values[static_cast<std::size_t>(v.ir)].named = true;
      min_level_ = std::min(min_level_, s.level);
    }
    out_.named[in.name] = std::move(v);
  }

  // ---- values and operations ----

  const IrState& st(int v) const { return out_.values[static_cast<std::size_t>(v)].state; }
  const std::string& label(int v) const { return out_.values[static_cast<std::size_t>(v)].label; }

  int new_value(const IrState& s, ValueKind kind, const std::string& name = "") {
    IrValue v;
    v.kind = kind;
    v.state = s;
    const int id = static_cast<int>(out_.values.size());
    if (name.empty()) {
      v.name = "__v" + std::to_string(id);
      v.label = "an intermediate value of step '" + spec_.steps[static_cast<std::size_t>(step_)].name + "'";
    } else {
      v.name = name;
      v.label = "'" + name + "'";
    }
    out_.values.push_back(std::move(v));
    return id;
  }

  double prime(int level) const {
    if (level >= 0 && level <= ctx_->max_level())
      return static_cast<double>(ctx_->q()[static_cast<std::size_t>(level)].value);
    return spec_.params.parameters.scale;  // beyond the parameters (only while measuring a depth error)
  }

  int emit(IrOp op, IrState result) {  // by value: callers pass states of out_.values, which grows here
    op.step_index = step_;
    const int id = new_value(result, ValueKind::result);
    op.results = {id};
    min_level_ = std::min(min_level_, result.level);
    out_.ops.push_back(std::move(op));
    return id;
  }

  IrOp make(OpKind kind, std::vector<int> args) {
    IrOp op;
    op.op = kind;
    op.args = std::move(args);
    return op;
  }

  // A plaintext constant holding `values` at a level and scale.
  int constant(const Slots& values, int level, double scale, const std::string& what) {
    IrState s;
    s.level = level;
    s.scale = scale;
    s.components = 1;
    const int id = new_value(s, ValueKind::constant);
    IrValue& v = out_.values[static_cast<std::size_t>(id)];
    v.name = "__c" + std::to_string(id);
    v.label = what;
    v.constant = values;
    return id;
  }

  // ---- the Engine's rules, on states ----

  void require_ntt(const char* op, int a) {
    if (st(a).domain != Domain::ntt) {
      refuse(std::string(op) + " needs the ntt domain but " + label(a) +
             " is in the coefficient domain: add a to_ntt step first");
    }
  }

  void require_two(const char* op, int a) {
    if (st(a).components != 2) {
      refuse(std::string(op) + " needs a 2-component ciphertext but " + label(a) + " has " +
             std::to_string(st(a).components) +
             " components (multiplied, not relinearized): add a relinearize step first");
    }
  }

  void require_same_level(const char* op, int a, int b) {
    if (st(a).level == st(b).level) return;
    const bool a_higher = st(a).level > st(b).level;
    const int high = a_higher ? a : b;
    const int low = a_higher ? b : a;
    std::string fix;
    const auto& hv = out_.values[static_cast<std::size_t>(high)];
    if (hv.named) {
      const std::string n = hv.name + "_" + std::to_string(st(low).level);
      fix = ": add a step {name: " + n + ", op: drop_to_level, args: [" + hv.name +
            "], level: " + std::to_string(st(low).level) + "} and use " + n;
    } else {
      fix = ": bring them to one level with drop_to_level";
    }
    refuse(std::string(op) + ": operands " + label(a) + " (" + state_text(st(a)) + ") and " + label(b) + " (" +
           state_text(st(b)) + ") are at different levels" + fix);
  }

  void require_aligned(const char* op, int a, int b) {
    require_same_level(op, a, b);
    if (!same_scale(st(a).scale, st(b).scale)) {
      std::string fix = ": compute them at one scale";
      const auto& av = out_.values[static_cast<std::size_t>(a)];
      const auto& bv = out_.values[static_cast<std::size_t>(b)];
      if (av.named && bv.named) {
        fix = ": add a step {name: " + av.name + "_aligned, op: align, args: [" + av.name + "], to: " + bv.name +
              "} (it uses one level, so align the higher operand before " + bv.name + " is computed) and use it";
      }
      refuse(std::string(op) + ": operands " + label(a) + " (" + state_text(st(a)) + ") and " + label(b) + " (" +
             state_text(st(b)) + ") have different scales" + fix);
    }
    if (st(a).domain != st(b).domain) {
      refuse(std::string(op) + ": operands " + label(a) + " and " + label(b) +
             " are in different domains: convert one with to_ntt or to_coefficient");
    }
    if (st(a).components != st(b).components) {
      refuse(std::string(op) + ": operands " + label(a) + " (" + std::to_string(st(a).components) +
             " components) and " + label(b) + " (" + std::to_string(st(b).components) +
             " components) differ: relinearize the 3-component one first");
    }
  }

  // The scale must stay below the modulus at the value's level, or decryption is garbage.
  void require_scale_fits(const char* op, const IrState& s) {
    if (s.level < 0 || depth_error_) return;  // past a depth error only the depth is measured
    const double bits = std::log2(s.scale);
    const double modulus = log_q_[static_cast<std::size_t>(s.level)];
    if (bits >= modulus - 1) {
      char buffer[256];
      std::snprintf(
          buffer, sizeof buffer,
          "%s: the result's scale 2^%.1f does not fit the modulus at level %d (2^%.1f): rescale the operands first", op,
          bits, s.level, modulus);
      refuse(buffer);
    }
  }

  // ---- primitive operations (one Engine call each) ----

  int add(int a, int b) {
    require_aligned("add", a, b);
    return emit(make(OpKind::add, {a, b}), st(a));
  }
  int sub(int a, int b) {
    require_aligned("sub", a, b);
    return emit(make(OpKind::sub, {a, b}), st(a));
  }
  int add_plain(OpKind kind, int a, const Slots& values, const std::string& what) {
    require_ntt(kind == OpKind::add ? "add" : "sub", a);
    const int c = constant(values, st(a).level, st(a).scale, what);
    return emit(make(kind, {a, c}), st(a));
  }
  int negate(int a) { return emit(make(OpKind::negate, {a}), st(a)); }
  int add_scalar(int a, double value) {
    IrOp op = make(OpKind::add_scalar, {a});
    op.scalar = value;
    return emit(op, st(a));
  }
  int sub_scalar(int a, double value) {
    IrOp op = make(OpKind::sub_scalar, {a});
    op.scalar = value;
    return emit(op, st(a));
  }
  int multiply(int a, int b) {
    require_two("multiply", a);
    require_two("multiply", b);
    require_ntt("multiply", a);
    require_ntt("multiply", b);
    require_same_level("multiply", a, b);
    IrState s = st(a);
    s.components = 3;
    s.scale = st(a).scale * st(b).scale;
    require_scale_fits("multiply", s);
    return emit(make(OpKind::multiply, {a, b}), s);
  }
  int relinearize(int a) {
    require_ntt("relinearize", a);
    if (st(a).components != 3) {
      refuse("relinearize needs a 3-component ciphertext (the result of multiply) but " + label(a) + " has " +
             std::to_string(st(a).components));
    }
    out_.plan.relinearization_key = true;
    IrState s = st(a);
    s.components = 2;
    return emit(make(OpKind::relinearize, {a}), s);
  }
  int multiply_plain(int a, const Slots& values, double scale, const std::string& what) {
    require_ntt("multiply_plain", a);
    const int c = constant(values, st(a).level, scale, what);
    IrState s = st(a);
    s.scale = st(a).scale * scale;
    require_scale_fits("multiply_plain", s);
    return emit(make(OpKind::multiply_plain, {a, c}), s);
  }
  int multiply_scalar(int a, double value, double scalar_scale) {
    if (!(scalar_scale >= 1.0) || !std::isfinite(scalar_scale)) {
      refuse("multiply_scalar: scalar scale " + std::to_string(scalar_scale) + " must be a finite value >= 1");
    }
    IrOp op = make(OpKind::multiply_scalar, {a});
    op.scalar = value;
    op.scalar_scale = scalar_scale;
    IrState s = st(a);
    s.scale = st(a).scale * scalar_scale;
    require_scale_fits("multiply_scalar", s);
    return emit(op, s);
  }
  int multiply_integer(int a, std::int64_t value) {
    IrOp op = make(OpKind::multiply_integer, {a});
    op.integer = value;
    return emit(op, st(a));
  }
  // A rescale from `level` is coming: below level 0 is a depth error (the
  // first one is reported, the rest of the calculation measures the depth).
  void expect_rescale_from(int level) {
    if (level <= 0 && !depth_error_) {
      const StepSpec& step = spec_.steps[static_cast<std::size_t>(step_)];
      depth_error_ = DepthError{step_, step.mark, step.key};
    }
  }

  int rescale(int a) {
    require_ntt("rescale", a);
    IrState s = st(a);
    expect_rescale_from(s.level);
    s.level -= 1;
    s.scale = st(a).scale / prime(st(a).level);
    IrOp op = make(OpKind::rescale, {a});
    return emit(op, s);
  }
  // drop_to_level; no operation when the level is already `level` unless `copy`.
  int drop(int a, int level, bool copy = false) {
    if (level > st(a).level) {
      refuse("drop_to_level: " + label(a) + " is at level " + std::to_string(st(a).level) +
             ", it cannot be raised to level " + std::to_string(level) + " (levels only go down)");
    }
    if (level == st(a).level && !copy) return a;
    IrOp op = make(OpKind::drop_to_level, {a});
    op.level = level;
    IrState s = st(a);
    s.level = level;
    return emit(op, s);
  }
  int rotate(int a, long step) {
    require_two("rotate", a);
    require_ntt("rotate", a);
    const long n = static_cast<long>(slots_);
    if (step % n != 0) out_.plan.rotation_steps.insert(step);
    IrOp op = make(OpKind::rotate, {a});
    op.step = step;
    return emit(op, st(a));
  }
  int conjugate(int a) {
    require_two("conjugate", a);
    require_ntt("conjugate", a);
    out_.plan.conjugation_key = true;
    return emit(make(OpKind::conjugate, {a}), st(a));
  }
  std::vector<int> rotate_hoisted(int a, const std::vector<long>& steps) {
    require_two("rotate_hoisted", a);
    require_ntt("rotate_hoisted", a);
    const long n = static_cast<long>(slots_);
    IrOp op = make(OpKind::rotate_hoisted, {a});
    op.steps = steps;
    op.step_index = step_;
    for (long s : steps) {
      if (s % n != 0) out_.plan.rotation_steps.insert(s);
      op.results.push_back(new_value(st(a), ValueKind::result));
    }
    out_.ops.push_back(op);
    return op.results;
  }
  int to_ntt(int a) {
    if (st(a).domain == Domain::ntt) refuse("to_ntt: " + label(a) + " is already in the ntt domain");
    IrState s = st(a);
    s.domain = Domain::ntt;
    return emit(make(OpKind::to_ntt, {a}), s);
  }
  int to_coefficient(int a) {
    require_ntt("to_coefficient", a);
    IrState s = st(a);
    s.domain = Domain::coefficient;
    return emit(make(OpKind::to_coefficient, {a}), s);
  }
  int sum(const std::vector<int>& values) {
    if (values.size() == 1) return values[0];
    for (int v : values) require_aligned("sum", values[0], v);
    return emit(make(OpKind::sum, values), st(values[0]));
  }
  int multiply_relinearize_rescale(int a, int b) {
    require_two("multiply_relinearize_rescale", a);
    require_two("multiply_relinearize_rescale", b);
    require_ntt("multiply_relinearize_rescale", a);
    require_ntt("multiply_relinearize_rescale", b);
    require_same_level("multiply_relinearize_rescale", a, b);
    IrState product = st(a);
    product.scale = st(a).scale * st(b).scale;
    expect_rescale_from(product.level);
    require_scale_fits("multiply_relinearize_rescale", product);
    out_.plan.relinearization_key = true;
    IrState s = product;
    s.level -= 1;
    s.scale = product.scale / prime(product.level);
    return emit(make(OpKind::multiply_relinearize_rescale, {a, b}), s);
  }

  // ---- composite helpers ----

  int multiply_aligned(int a, int b) {
    if (st(a).level > st(b).level) a = drop(a, st(b).level);
    if (st(b).level > st(a).level) b = drop(b, st(a).level);
    return multiply_relinearize_rescale(a, b);
  }

  int sum_slots(int v, std::size_t width) {
    for (std::size_t s = 1; s < width; s *= 2) v = add(v, rotate(v, static_cast<long>(s)));
    return v;
  }

  // a at b's level and scale: drop to one level above, multiply by 1 at the
  // scale that makes the rescale land exactly on b's scale.
  int align(int a, int b) {
    require_two("align", a);
    require_ntt("align", a);
    const IrState target = st(b);
    if (st(a).level == target.level && same_scale(st(a).scale, target.scale)) return a;
    if (st(a).level < target.level + 1) {
      refuse("align: " + label(a) + " is at level " + std::to_string(st(a).level) + "; reaching " + label(b) + " (" +
             state_text(target) + ") needs level " + std::to_string(target.level + 1) +
             " or higher (one level is used to set the scale)");
    }
    expect_rescale_from(target.level + 1);
    const int dropped = drop(a, target.level + 1);
    const double scalar_scale = target.scale * prime(target.level + 1) / st(dropped).scale;
    return rescale(multiply_scalar(dropped, 1.0, scalar_scale));
  }

  // ---- polynomials ----

  int power(int i) {
    if (const auto it = powers_.find(i); it != powers_.end()) return it->second;
    int r;
    if (i == 1) {
      r = x_;
    } else if ((i & (i - 1)) == 0) {
      const int half = power(i / 2);
      r = multiply_relinearize_rescale(half, half);
    } else {
      int a = 1;
      while (a * 2 < i) a *= 2;
      r = multiply_aligned(power(a), power(i - a));
    }
    powers_[i] = r;
    return r;
  }

  // sum_i c_i x^i + c0, rescaled once, landing on `target` (default: one level
  // below the lowest term, at the parameters' scale).
  int linear_combination(const std::vector<std::pair<int, double>>& terms, double c0, std::optional<Target> target) {
    int lowest = st(terms[0].first).level;
    for (const auto& [v, c] : terms) lowest = std::min(lowest, st(v).level);
    const Target t = target.value_or(Target{lowest - 1, spec_.params.parameters.scale});
    if (t.level + 1 > lowest) {
      refuse("polynomial: internal schedule error: terms at level " + std::to_string(lowest) + " cannot reach level " +
             std::to_string(t.level));
    }
    expect_rescale_from(t.level + 1);
    std::vector<int> parts;
    for (const auto& [v, c] : terms) {
      const int d = drop(v, t.level + 1);
      parts.push_back(multiply_scalar(d, c, t.scale * prime(t.level + 1) / st(d).scale));
    }
    int s = sum(parts);
    if (c0 != 0) s = add_scalar(s, c0);
    return rescale(s);
  }

  PolyVal block(const std::vector<double>& c, std::optional<Target> target) {
    std::vector<std::pair<int, double>> terms;
    for (std::size_t i = 1; i < c.size(); ++i) {
      if (c[i] != 0) terms.emplace_back(power(static_cast<int>(i)), c[i]);
    }
    if (terms.empty()) return {-1, c.empty() ? 0.0 : c[0]};
    return {linear_combination(terms, c[0], target), 0};
  }

  // r * g, landing on `target` when given (r was evaluated for it).
  PolyVal product(PolyVal r, int g, std::optional<Target> target) {
    if (r.ir < 0) {
      if (r.constant == 0) return {};
      const int level = target ? target->level + 1 : st(g).level;
      expect_rescale_from(level);
      const int d = drop(g, level);
      const double scalar_scale = target ? target->scale * prime(level) / st(d).scale : prime(level);
      return {rescale(multiply_scalar(d, r.constant, scalar_scale)), 0};
    }
    if (target) {
      const int d = drop(g, target->level + 1);
      const int rr = drop(r.ir, target->level + 1);
      return {multiply_relinearize_rescale(rr, d), 0};
    }
    return {multiply_aligned(r.ir, g), 0};
  }

  PolyVal combine(PolyVal product_value, PolyVal low) {
    if (low.ir < 0) {
      if (low.constant == 0) return product_value;
      return {add_scalar(product_value.ir, low.constant), 0};
    }
    return {add(product_value.ir, low.ir), 0};
  }

  static std::vector<double> trimmed(std::vector<double> c) {
    while (c.size() > 1 && c.back() == 0) c.pop_back();
    return c;
  }

  // Baby-step giant-step: baby powers x..x^(k-1), giant powers x^(k 2^j);
  // p = low + x^(k 2^j) high, recursively.
  PolyVal bsgs(std::vector<double> c, std::optional<Target> target, int k) {
    c = trimmed(std::move(c));
    if (c.size() <= static_cast<std::size_t>(k)) return block(c, target);
    std::size_t giant = static_cast<std::size_t>(k);
    while (giant * 2 < c.size()) giant *= 2;
    const int g = power(static_cast<int>(giant));
    const std::vector<double> low(c.begin(), c.begin() + static_cast<long>(giant));
    const std::vector<double> high(c.begin() + static_cast<long>(giant), c.end());
    std::optional<Target> high_target;
    if (target) high_target = Target{target->level + 1, target->scale * prime(target->level + 1) / st(g).scale};
    const PolyVal r = bsgs(high, high_target, k);
    const PolyVal p = product(r, g, target);
    if (p.ir < 0) return bsgs(low, target, k);
    return combine(p, bsgs(low, Target{st(p.ir).level, st(p.ir).scale}, k));
  }

  // Paterson-Stockmeyer: baby powers x..x^(k-1), y = x^k, Horner in y over
  // blocks of k coefficients (fewest ciphertext multiplications).
  PolyVal paterson_stockmeyer(const std::vector<double>& c, int k) {
    const std::size_t blocks = (c.size() + static_cast<std::size_t>(k) - 1) / static_cast<std::size_t>(k);
    const auto block_coefficients = [&](std::size_t j) {
      const std::size_t begin = j * static_cast<std::size_t>(k);
      const std::size_t end = std::min(c.size(), begin + static_cast<std::size_t>(k));
      return std::vector<double>(c.begin() + static_cast<long>(begin), c.begin() + static_cast<long>(end));
    };
    PolyVal acc = block(trimmed(block_coefficients(blocks - 1)), std::nullopt);
    if (blocks == 1) return acc;
    const int y = power(k);
    for (std::size_t j = blocks - 1; j-- > 0;) {
      const PolyVal p = product(acc, y, std::nullopt);
      if (p.ir < 0) {
        acc = block(trimmed(block_coefficients(j)), std::nullopt);
        continue;
      }
      acc = combine(p, block(trimmed(block_coefficients(j)), Target{st(p.ir).level, st(p.ir).scale}));
    }
    return acc;
  }

  int polynomial(int x, const StepSpec& s) {
    require_two("polynomial", x);
    require_ntt("polynomial", x);
    x_ = x;
    powers_.clear();
    const int degree = static_cast<int>(s.coefficients.size()) - 1;
    PolyVal r;
    if (s.method == PolynomialMethod::baby_step_giant_step) {
      int k = 2;
      while (k * k < degree + 1) k *= 2;
      r = bsgs(s.coefficients, std::nullopt, k);
    } else {
      const int k = std::max(2, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(degree + 1)))));
      r = paterson_stockmeyer(s.coefficients, k);
    }
    if (r.ir < 0) refuse("polynomial: internal error: the result is a constant");
    return r.ir;
  }

  // ---- steps ----

  struct DepthError {
    int step;
    SourceMark mark;
    std::string key;
  };

  [[noreturn]] void throw_depth_error() {
    const int have = ctx_->max_level();
    const int need = have - min_level_;
    const int more = need - have;
    const StepSpec& s = spec_.steps[static_cast<std::size_t>(depth_error_->step)];
    std::string suggestion;
    for (const auto& name : preset_names()) {
      const CkksParameters p = preset(name);
      if (p.max_level() >= need && p.log_ring_degree >= spec_.params.parameters.log_ring_degree) {
        if (suggestion.empty() || p.log_ring_degree < preset(suggestion).log_ring_degree) suggestion = name;
      }
    }
    throw PipelineError(depth_error_->mark, depth_error_->key,
                        "step '" + s.name + "' (" + s.op + ") goes below level 0: the calculation needs depth " +
                            std::to_string(need) + " but the parameters give " + std::to_string(have) +
                            " levels; add " + std::to_string(more) + " prime" + (more == 1 ? "" : "s") +
                            " to params.q_bits" +
                            (suggestion.empty() ? std::string() : " or use the preset " + suggestion) +
                            (s.op == "polynomial" ? ", or lower the polynomial's degree" : ""));
  }

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

  int ct(const NamedValue& v, const std::string& name, const std::string& op) {
    if (!v.encrypted) {
      refuse("'" + name + "' is a plaintext input, but " + op +
             " needs a ciphertext here: set encrypted: true on input '" + name +
             "', or use it as the second operand of add, sub, multiply_plain or inner_product");
    }
    return v.ir;
  }

  // A plaintext operand's slots.
  const Slots& plain(const NamedValue& v, const std::string& name) {
    if (v.clear.size() != slots_) {
      refuse("plaintext '" + name + "' does not fit the " + std::to_string(slots_) + " slots when packed row by row");
    }
    return v.clear;
  }

  static NamedValue elementwise(const NamedValue& a, const NamedValue& b) {
    NamedValue r;
    r.length = std::max(a.length, b.length);
    r.period = std::max(a.period, b.period);
    return r;
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

  NamedValue matvec(const StepSpec& s, const NamedValue& x, int xi) {
    const auto m = matrix_of(s);
    const std::size_t rows = m.size();
    const std::size_t cols = m[0].size();
    if (x.length != cols) {
      refuse("matrix is " + std::to_string(rows) + "x" + std::to_string(cols) + " but '" + s.args[0] + "' has " +
             std::to_string(x.length) + " values: the matrix needs one column per value");
    }
    const std::size_t px = next_power_of_two(cols);
    const std::size_t py = next_power_of_two(rows);
    if (px != x.period) {
      refuse("'" + s.args[0] + "' repeats every " + std::to_string(x.period) + " slots, but a matrix with " +
             std::to_string(cols) + " columns needs a period of " + std::to_string(px));
    }
    if (py > slots_) {
      refuse("matrix has " + std::to_string(rows) + " rows but the parameters give " + std::to_string(slots_) +
             " slots");
    }
    const auto entry = [&](std::size_t r, std::size_t c) { return r < rows && c < cols ? m[r][c] : 0.0; };
    std::vector<long> steps;
    std::vector<Slots> diagonals;
    std::vector<std::size_t> used;
    for (std::size_t i = 0; i < px; ++i) {
      Slots d(slots_);
      bool nonzero = false;
      for (std::size_t j = 0; j < slots_; ++j) {
        d[j] = entry(j % py, (j + i) % px);
        nonzero = nonzero || d[j] != 0.0;
      }
      if (!nonzero) continue;
      used.push_back(i);
      diagonals.push_back(std::move(d));
      if (i != 0) steps.push_back(static_cast<long>(i));
    }
    if (used.empty()) refuse("the matrix is all zeros");
    expect_rescale_from(st(xi).level);
    const double plain_scale = prime(st(xi).level);
    const auto what = [&](std::size_t i) {
      return "diagonal " + std::to_string(i) + " of the matrix of step '" + s.name + "'";
    };
    int total;
    if (!s.matvec_bsgs) {
      // y = sum_i d_i * rotate(x, i), every rotation hoisted.
      std::vector<int> rotations;
      if (!steps.empty()) rotations = rotate_hoisted(xi, steps);
      std::vector<int> products;
      std::size_t next_rotation = 0;
      for (std::size_t k = 0; k < used.size(); ++k) {
        const int source = used[k] == 0 ? xi : rotations[next_rotation++];
        products.push_back(multiply_plain(source, diagonals[k], plain_scale, what(used[k])));
      }
      total = sum(products);
    } else {
      // Baby-step giant-step: i = g B + b,
      // y = sum_g rotate(sum_b rotate(d_i, -g B) * rotate(x, b), g B):
      // B - 1 hoisted baby rotations and one giant rotation per group.
      std::size_t baby = 1;
      while (baby * baby * 2 <= px) baby *= 2;  // the power of two nearest sqrt(px), rounding down at ties
      std::vector<long> baby_steps;
      std::vector<bool> baby_used(baby, false);
      for (std::size_t i : used) baby_used[i % baby] = true;
      for (std::size_t b = 1; b < baby; ++b) {
        if (baby_used[b]) baby_steps.push_back(static_cast<long>(b));
      }
      std::vector<int> babies(baby, -1);
      babies[0] = xi;
      if (!baby_steps.empty()) {
        const auto r = rotate_hoisted(xi, baby_steps);
        for (std::size_t k = 0; k < r.size(); ++k) babies[static_cast<std::size_t>(baby_steps[k])] = r[k];
      }
      std::vector<int> groups;
      for (std::size_t g = 0; g * baby < px; ++g) {
        std::vector<int> products;
        for (std::size_t k = 0; k < used.size(); ++k) {
          if (used[k] / baby != g) continue;
          const long shift = static_cast<long>(g * baby);
          products.push_back(multiply_plain(babies[used[k] % baby], g ? rotated(diagonals[k], -shift) : diagonals[k],
                                            plain_scale, what(used[k])));
        }
        if (products.empty()) continue;
        const int inner = sum(products);
        groups.push_back(g ? rotate(inner, static_cast<long>(g * baby)) : inner);
      }
      total = sum(groups);
    }
    NamedValue r;
    r.ir = rescale(total);
    r.length = rows;
    r.period = py;
    // The clear product, row by row, independent of the diagonal layout.
    std::vector<std::complex<double>> y(rows);
    for (std::size_t row = 0; row < rows; ++row) {
      for (std::size_t c = 0; c < cols; ++c) y[row] += m[row][c] * x.clear[c];
    }
    r.clear = replicate(y, slots_);
    return r;
  }

  void compile_step(std::size_t index) {
    const StepSpec& s = spec_.steps[index];
    step_ = static_cast<int>(index);
    const std::size_t begin = out_.ops.size();
    std::vector<const NamedValue*> a;
    for (std::size_t j = 0; j < s.args.size(); ++j) a.push_back(&arg(s, j));
    std::vector<std::pair<std::string, NamedValue>> results;
    try {
      results = dispatch(s, a);
    } catch (const StepFailure& f) {
      throw PipelineError(s.mark, s.key, "step '" + s.name + "' (" + s.op + "): " + f.reason);
    }
    std::vector<std::string> names;
    for (auto& [name, v] : results) {
      v.step = static_cast<int>(index);
      v.encrypted = true;
      IrValue& iv = out_.values[static_cast<std::size_t>(v.ir)];
      if (iv.named || iv.kind != ValueKind::result) {
        // The step's result is an existing value: give the step its own copy.
        v.ir = drop(v.ir, st(v.ir).level, true);
      }
      IrValue& fresh = out_.values[static_cast<std::size_t>(v.ir)];
      fresh.name = name;
      fresh.label = "'" + name + "'";
      fresh.named = true;
      names.push_back(name);
      out_.named[name] = std::move(v);
    }
    out_.step_ops.emplace_back(begin, out_.ops.size());
    out_.step_results.push_back(std::move(names));
  }

  std::vector<std::pair<std::string, NamedValue>> dispatch(const StepSpec& s, const std::vector<const NamedValue*>& a) {
    const std::string& op = s.op;
    const auto one = [&](NamedValue v) {
      return std::vector<std::pair<std::string, NamedValue>>{{s.name, std::move(v)}};
    };
    const auto unary = [&](int ir, const Slots& clear) {
      NamedValue r;
      r.ir = ir;
      r.length = a[0]->length;
      r.period = a[0]->period;
      r.clear = clear;
      return one(std::move(r));
    };
    if (op == "add" || op == "sub") {
      const bool is_add = op == "add";
      NamedValue r = elementwise(*a[0], *a[1]);
      if (!a[0]->encrypted && !a[1]->encrypted) {
        refuse("both operands are plaintext inputs; at least one must be encrypted");
      }
      if (a[0]->encrypted && a[1]->encrypted) {
        r.ir = is_add ? add(a[0]->ir, a[1]->ir) : sub(a[0]->ir, a[1]->ir);
      } else if (a[0]->encrypted) {
        r.ir = add_plain(is_add ? OpKind::add : OpKind::sub, a[0]->ir, plain(*a[1], s.args[1]),
                         "plaintext '" + s.args[1] + "'");
      } else if (is_add) {
        r.ir = add_plain(OpKind::add, a[1]->ir, plain(*a[0], s.args[0]), "plaintext '" + s.args[0] + "'");
      } else {  // plain - ct = -(ct - plain)
        r.ir = negate(add_plain(OpKind::sub, a[1]->ir, plain(*a[0], s.args[0]), "plaintext '" + s.args[0] + "'"));
      }
      r.clear = zip(a[0]->clear, a[1]->clear, [&](auto x, auto y) { return is_add ? x + y : x - y; });
      return one(std::move(r));
    }
    if (op == "negate") return unary(negate(ct(*a[0], s.args[0], op)), map(a[0]->clear, [](auto x) { return -x; }));
    if (op == "add_scalar" || op == "sub_scalar") {
      const int x = ct(*a[0], s.args[0], op);
      const double v = s.value;
      const bool plus = op == "add_scalar";
      return unary(plus ? add_scalar(x, v) : sub_scalar(x, v),
                   map(a[0]->clear, [&](auto y) { return plus ? y + v : y - v; }));
    }
    if (op == "multiply") {
      const int x = ct(*a[0], s.args[0], op);
      if (!a[1]->encrypted)
        refuse("'" + s.args[1] + "' is a plaintext input: use multiply_plain to multiply by a plaintext");
      NamedValue r = elementwise(*a[0], *a[1]);
      r.ir = multiply(x, a[1]->ir);
      r.clear = zip(a[0]->clear, a[1]->clear, [](auto p, auto q) { return p * q; });
      return one(std::move(r));
    }
    if (op == "relinearize") return unary(relinearize(ct(*a[0], s.args[0], op)), a[0]->clear);
    if (op == "multiply_plain") {
      const int x = ct(*a[0], s.args[0], op);
      if (a[1]->encrypted)
        refuse("'" + s.args[1] + "' is encrypted: use multiply (or multiply_relinearize_rescale) for two ciphertexts");
      NamedValue r = elementwise(*a[0], *a[1]);
      r.ir = multiply_plain(x, plain(*a[1], s.args[1]), s.plain_scale.value_or(prime(st(x).level)),
                            "plaintext '" + s.args[1] + "'");
      r.clear = zip(a[0]->clear, a[1]->clear, [](auto p, auto q) { return p * q; });
      return one(std::move(r));
    }
    if (op == "multiply_scalar") {
      const int x = ct(*a[0], s.args[0], op);
      const double v = s.value;
      return unary(multiply_scalar(x, v, s.scalar_scale.value_or(prime(st(x).level))),
                   map(a[0]->clear, [&](auto y) { return y * v; }));
    }
    if (op == "multiply_integer") {
      const double v = static_cast<double>(s.integer);
      return unary(multiply_integer(ct(*a[0], s.args[0], op), s.integer),
                   map(a[0]->clear, [&](auto y) { return y * v; }));
    }
    if (op == "rescale") return unary(rescale(ct(*a[0], s.args[0], op)), a[0]->clear);
    if (op == "drop_to_level") return unary(drop(ct(*a[0], s.args[0], op), s.level, true), a[0]->clear);
    if (op == "rotate") return unary(rotate(ct(*a[0], s.args[0], op), s.step), rotated(a[0]->clear, s.step));
    if (op == "conjugate") {
      return unary(conjugate(ct(*a[0], s.args[0], op)), map(a[0]->clear, [](auto y) { return std::conj(y); }));
    }
    if (op == "rotate_hoisted") {
      const auto irs = rotate_hoisted(ct(*a[0], s.args[0], op), s.steps);
      std::vector<std::pair<std::string, NamedValue>> out;
      for (std::size_t i = 0; i < irs.size(); ++i) {
        NamedValue r;
        r.ir = irs[i];
        r.length = a[0]->length;
        r.period = a[0]->period;
        r.clear = rotated(a[0]->clear, s.steps[i]);
        out.emplace_back(s.result_names[i], std::move(r));
      }
      return out;
    }
    if (op == "to_ntt") return unary(to_ntt(ct(*a[0], s.args[0], op)), a[0]->clear);
    if (op == "to_coefficient") return unary(to_coefficient(ct(*a[0], s.args[0], op)), a[0]->clear);
    if (op == "sum") {
      std::vector<int> irs;
      NamedValue r = *a[0];
      Slots clear(slots_);
      for (std::size_t j = 0; j < a.size(); ++j) {
        irs.push_back(ct(*a[j], s.args[j], op));
        r = elementwise(r, *a[j]);
        for (std::size_t k = 0; k < slots_; ++k) clear[k] += a[j]->clear[k];
      }
      r.ir = irs.size() == 1 ? drop(irs[0], st(irs[0]).level, true) : sum(irs);
      r.clear = std::move(clear);
      return one(std::move(r));
    }
    if (op == "multiply_relinearize_rescale") {
      const int x = ct(*a[0], s.args[0], op);
      const int y = ct(*a[1], s.args[1], op);
      NamedValue r = elementwise(*a[0], *a[1]);
      r.ir = multiply_relinearize_rescale(x, y);
      r.clear = zip(a[0]->clear, a[1]->clear, [](auto p, auto q) { return p * q; });
      return one(std::move(r));
    }
    if (op == "matvec") return one(matvec(s, *a[0], ct(*a[0], s.args[0], op)));
    if (op == "polynomial") {
      const int x = ct(*a[0], s.args[0], op);
      const auto& c = s.coefficients;
      return unary(polynomial(x, s), map(a[0]->clear, [&](std::complex<double> y) {
                     std::complex<double> acc = c.back();
                     for (std::size_t i = c.size() - 1; i-- > 0;) acc = acc * y + c[i];
                     return acc;
                   }));
    }
    if (op == "inner_product" || op == "sum_slots") {
      const int x = ct(*a[0], s.args[0], op);
      NamedValue r = op == "sum_slots" ? *a[0] : elementwise(*a[0], *a[1]);
      const std::size_t width = s.width.value_or(r.period);
      int v = x;
      Slots clear = a[0]->clear;
      if (op == "inner_product") {
        if (a[1]->encrypted) {
          v = multiply_aligned(x, a[1]->ir);
        } else {
          expect_rescale_from(st(x).level);
          v = rescale(multiply_plain(x, plain(*a[1], s.args[1]), prime(st(x).level), "plaintext '" + s.args[1] + "'"));
        }
        clear = zip(a[0]->clear, a[1]->clear, [](auto p, auto q) { return p * q; });
      }
      r.ir = sum_slots(v, width);
      r.clear = summed_slots(std::move(clear), width);
      if (width >= r.period) {
        r.length = 1;
        r.period = 1;
      }
      return one(std::move(r));
    }
    if (op == "align") {
      const int x = ct(*a[0], s.args[0], op);
      const auto it = out_.named.find(s.to);
      if (it == out_.named.end() || !it->second.encrypted) {
        std::vector<std::string> defined;
        for (const auto& [name, v] : out_.named) {
          if (v.encrypted) defined.push_back(name);
        }
        refuse("'to: " + s.to + "' is not an encrypted value defined before this step " + known_list(defined, s.to));
      }
      return unary(align(x, it->second.ir), a[0]->clear);
    }
    refuse("unknown operation '" + op + "'");
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

  void finish_plan() {
    PipelinePlan& plan = out_.plan;
    for (std::size_t i = 0; i < spec_.steps.size(); ++i) {
      const StepSpec& s = spec_.steps[i];
      const NamedValue& v = out_.named.at(out_.step_results[i].front());
      const IrState& state = st(v.ir);
      PlannedStep p;
      p.name = s.name;
      p.op = s.op;
      p.level = state.level;
      p.scale = state.scale;
      p.domain = state.domain;
      p.components = state.components;
      p.operations = out_.step_ops[i].second - out_.step_ops[i].first;
      p.length = v.length;
      plan.steps.push_back(p);
    }
    plan.operations = out_.ops.size();
    plan.depth = ctx_->max_level() - min_level_;
  }

  const PipelineSpec& spec_;
  std::shared_ptr<const Context> ctx_;
  Compiled out_;
  std::size_t slots_ = 0;
  std::vector<double> log_q_;  // log2 of Q at each level
  int step_ = -1;
  int min_level_ = 0;
  std::optional<DepthError> depth_error_;
  int x_ = -1;
  std::map<int, int> powers_;
};

}  // namespace

Compiled compile_pipeline(const PipelineSpec& spec) { return Compiler(spec).run(); }

}  // namespace fhelium::runtime::pipeline_detail

namespace fhelium::runtime {

PipelinePlan plan_pipeline(const PipelineSpec& spec) { return pipeline_detail::compile_pipeline(spec).plan; }

}  // namespace fhelium::runtime
