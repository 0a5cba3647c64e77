#include "fhelium/circuits/bootstrap.hpp"

#include <cmath>
#include <complex>
#include <numbers>
#include <string>

#include "circuit_internal.hpp"
#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/polynomial.hpp"
#include "fhelium/circuits/special_fft.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/evaluation_keys.hpp"

namespace fhelium::circuits {
namespace {

using runtime::Slots;

// The cosine EvalMod interpolates: cos(2 pi (K' y - 1/4) / 2^r) on [-1, 1].
Polynomial cosine(const BootstrapConfig& config, double interval) {
  const double r = std::ldexp(1.0, config.double_angle);
  return Polynomial::chebyshev_interpolant(
      [&](double y) { return std::cos(2.0 * std::numbers::pi * (interval * y - 0.25) / r); }, config.cosine_degree,
      -1.0, 1.0);
}

// sin(2 pi K' y) at exactly `scale`: the interpolant, then r double-angle
// steps (then the arcsine correction, which keeps the scale).
ValueRef eval_mod(ProgramBuilder& b, ValueRef y, const Polynomial& cos, const BootstrapConfig& config, double scale) {
  const int top = b.state(y).level - polynomial_depth(cos);
  // Backwards from the output: a step at level l turns scale s into s^2 / q_l.
  double s = scale;
  for (int i = config.double_angle - 1; i >= 0; --i) s = std::sqrt(s * detail::rescale_divisor(b, top - i));
  PolynomialOptions options;
  options.output_scale = s;
  ValueRef z = evaluate_polynomial(b, y, cos, options);
  for (int i = 0; i < config.double_angle; ++i) {
    z = b.multiply_relinearize_rescale(z, z);
    z = b.sub_scalar(b.add(z, z), 1.0);
  }
  if (!config.arcsine_correction) return z;
  Polynomial arcsine;
  arcsine.coefficients = {0.0, 1.0, 0.0, 1.0 / 6.0};
  PolynomialOptions exact;
  exact.output_scale = scale;
  return evaluate_polynomial(b, z, arcsine, exact);
}

// A constant holding `value` in every slot at scale 1: for +-i, the monomial
// +-X^(N/2), an exact product that keeps the scale and the level.
ValueRef unit(ProgramBuilder& b, const std::string& name, std::complex<double> value) {
  return b.constant(b.fresh_name(name), Slots(b.context()->ring_degree() / 2, value), 1.0);
}

// A matrix of the special FFT as the linear transform reads it: input and
// output periods (n, or 2n for the packed real and imaginary halves).
struct Matrix {
  Diagonals diagonals;
  std::size_t input_period = 0;
  std::size_t output_period = 0;
};

// The matrices of n slots, each times factor^(1 / count): the factor is
// spread evenly, as is the change of scale in apply_all, so every diagonal's
// integers are equally large (CoeffToSlot's factor of about 2^-25 in one
// matrix would leave its diagonals 25 bits of precision fewer than the others').
std::vector<Matrix> spread(const std::vector<Diagonals>& matrices, double factor, std::size_t n) {
  std::vector<Matrix> out;
  const double each = std::pow(factor, 1.0 / static_cast<double>(matrices.size()));
  for (const Diagonals& m : matrices) out.push_back({scaled(m, each), n, n});
  return out;
}

// [M; 0]: M's output in slots 0..n-1 of a period of 2n, zeros after it.
Matrix tall(const Matrix& m) {
  Matrix out{{}, m.input_period, 2 * m.output_period};
  for (const auto& [k, d] : m.diagonals) {
    Slots extended(2 * d.size());
    std::copy(d.begin(), d.end(), extended.begin());
    out.diagonals.emplace(k, std::move(extended));
  }
  return out;
}

// [M | i M] on a period of 2n: M (R + i I) from R in slots 0..n-1 and I in
// n..2n-1. Diagonal k of it holds, in slot j, M_(k mod n)[j mod n], times i
// where column (j + k) mod 2n is in the second half.
Matrix wide_with_i(const Matrix& m) {
  const std::size_t n = m.input_period;
  Matrix out{{}, 2 * n, m.output_period};
  for (const auto& [k0, d] : m.diagonals) {
    for (const std::size_t k : {static_cast<std::size_t>(k0), static_cast<std::size_t>(k0) + n}) {
      Slots diagonal(2 * n);
      for (std::size_t j = 0; j < 2 * n; ++j) {
        const bool second_half = (j + k) % (2 * n) >= n;
        diagonal[j] = d[j % n] * (second_half ? std::complex<double>(0.0, 1.0) : 1.0);
      }
      out.diagonals.emplace(static_cast<long>(k), std::move(diagonal));
    }
  }
  return out;
}

// M D, D = diag(1/2, 1, .., 1): column 0 halved (slot (n - k) mod n of
// diagonal k).
Matrix halved_first_column(Matrix m) {
  const std::size_t n = m.input_period;
  for (auto& [k, d] : m.diagonals) d[(n - static_cast<std::size_t>(k)) % n] *= 0.5;
  return m;
}

// The matrices applied in order, ending at exactly `output_scale`; the
// scale changes evenly over them: a diagonal is encoded at q_l times the
// ratio of its transform's output and input scales.
ValueRef apply_all(ProgramBuilder& b, ValueRef x, const std::vector<Matrix>& matrices, const std::string& name,
                   double output_scale, const BootstrapConfig& config) {
  const double count = static_cast<double>(matrices.size());
  const double input_scale = b.state(x).scale;
  const std::size_t slots = b.context()->ring_degree() / 2;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    const Matrix& m = matrices[i];
    const LinearTransform t = LinearTransform::from_diagonals(m.diagonals, m.input_period, m.output_period, slots)
                                  .with_horner_giants(config.horner_giants)
                                  .with_rotate_sum(config.rotate_sums.value_or(false));
    const bool last = i + 1 == matrices.size();
    const double scale =
        last ? output_scale : input_scale * std::pow(output_scale / input_scale, static_cast<double>(i + 1) / count);
    x = t.apply(b, x, b.fresh_name(name + std::to_string(i)), scale);
  }
  return x;
}

}  // namespace

int BootstrapConfig::eval_mod_depth() const {
  return detail::ceil_log2(static_cast<std::size_t>(cosine_degree) + 1) + double_angle + (arcsine_correction ? 2 : 0);
}

int BootstrapConfig::depth() const { return coeff_to_slot_levels + eval_mod_depth() + slot_to_coeff_levels; }

CkksParameters bootstrap_parameters(int log_ring_degree, int user_levels, const BootstrapConfig& config,
                                    WordSize word_size) {
  CkksParameters p;
  p.log_ring_degree = log_ring_degree;
  p.scale = std::ldexp(1.0, 40);
  if (word_size == WordSize::bits32) {
    // The rational chain's smallest top level 3g + 1 that holds the user's
    // and SlotToCoeff's levels (4g + 2 mains), then the wide levels.
    const int rational_levels = user_levels + config.slot_to_coeff_levels;
    const int mains = 2 + 4 * ((rational_levels + 1) / 3);
    p.word_size = WordSize::bits32;
    p.wide_levels = config.eval_mod_depth() + config.coeff_to_slot_levels;
    p.q_bits = {20, 20};
    p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(mains + 2 * p.wide_levels), 30);
    p.p_bits.assign((p.q_bits.size() + 3) / 4, 31);
    return p;
  }
  p.q_bits.push_back(60);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(user_levels + config.slot_to_coeff_levels), 40);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(config.eval_mod_depth() + config.coeff_to_slot_levels),
                  wide_level_bits);
  p.p_bits.assign((p.q_bits.size() + 4) / 5, wide_level_bits);
  return p;
}

int overflow_bound(const Context& context, const BootstrapConfig& config) {
  if (config.overflow_bound > 0) return config.overflow_bound;
  const int h = context.params().hamming_weight;
  return ((h > 0 ? h : config.ephemeral_hamming_weight) + 1) / 2;
}

bool uses_encapsulation(const Context& context, const BootstrapConfig& config) {
  return context.params().hamming_weight == 0 && config.overflow_bound == 0;
}

double message_ratio(const Context& context, const BootstrapConfig& config) {
  if (config.message_ratio > 0) return config.message_ratio;
  return context.ring_degree() >= (std::size_t{1} << 16) ? 128.0 : 256.0;
}

std::size_t bootstrap_slots(const Context& context, const BootstrapConfig& config) {
  return config.slots == 0 ? context.ring_degree() / 2 : config.slots;
}

namespace {

void check_config(const Context& context, const BootstrapConfig& config) {
  const std::size_t slots = bootstrap_slots(context, config);
  if (slots < 2 || slots > context.ring_degree() / 2 || (slots & (slots - 1)) != 0) {
    throw InvalidArgumentError("bootstrap: slots is " + std::to_string(slots) + ", expected a power of two in 2.." +
                               std::to_string(context.ring_degree() / 2) + " (0: all N/2)");
  }
  if (config.real_only && slots != context.ring_degree() / 2) {
    throw InvalidArgumentError("bootstrap: real_only with " + std::to_string(slots) +
                               " slots; expected full slots (sparse slot counts already run one EvalMod)");
  }
  const int log_slots = detail::ceil_log2(slots);
  for (const auto& [name, levels] : {std::pair{"coeff_to_slot_levels", config.coeff_to_slot_levels},
                                     std::pair{"slot_to_coeff_levels", config.slot_to_coeff_levels}}) {
    if (levels < 1 || levels > log_slots) {
      throw InvalidArgumentError(std::string("bootstrap: ") + name + " is " + std::to_string(levels) +
                                 ", expected 1.." + std::to_string(log_slots));
    }
  }
  if (config.double_angle < 0 || config.cosine_degree < 2 ||
      !(config.message_ratio == 0 || config.message_ratio >= 1.0)) {
    throw InvalidArgumentError("bootstrap: double_angle " + std::to_string(config.double_angle) + ", cosine_degree " +
                               std::to_string(config.cosine_degree) + ", message_ratio " +
                               std::to_string(config.message_ratio) +
                               "; expected double_angle >= 0, cosine_degree >= 2 and message_ratio >= 1 (or 0: by N)");
  }
  if (context.max_level() < config.depth()) {
    throw InvalidArgumentError("bootstrap: the configuration consumes " + std::to_string(config.depth()) +
                               " levels (CoeffToSlot " + std::to_string(config.coeff_to_slot_levels) + ", EvalMod " +
                               std::to_string(config.eval_mod_depth()) + ", SlotToCoeff " +
                               std::to_string(config.slot_to_coeff_levels) + "), the context has " +
                               std::to_string(context.max_level()) + " above level 0");
  }
}

// Q_0, the modulus ModRaise works modulo: level 0's primes' product (one
// prime in the 64-bit family, two in the 32-bit one).
double level_zero_modulus(const Context& context) {
  double q0 = 1.0;
  for (int i = 0; i < context.level_basis(0).count; ++i) q0 *= static_cast<double>(context.level_modulus(0, i).value);
  return q0;
}

// M: the integer that brings the coefficients to about q_0 / message_ratio.
std::int64_t up_scaling(const Context& context, double delta, const BootstrapConfig& config) {
  const double q0 = level_zero_modulus(context);
  return static_cast<std::int64_t>(std::max(1.0, std::floor(q0 / (delta * message_ratio(context, config)))));
}

// Stages 3-5 on `v`, a raised ciphertext (top level) of M m + q_0 I with
// |I| <= bound, m the message at scale delta (twice v's scale for
// real_only). With n < N/2 slots the trace first keeps the coefficients at
// multiples of N/2n (times N/2n), and the real and imaginary parts share one
// ciphertext of period 2n through EvalMod.
ValueRef from_raised(ProgramBuilder& b, ValueRef v, const BootstrapConfig& config, double delta, std::int64_t up,
                     int bound, BootstrapStages& at) {
  const Context& context = *b.context();
  const std::size_t full = context.ring_degree() / 2;
  const std::size_t n = bootstrap_slots(context, config);
  const bool packed = n < full;
  const double interval = bound + 1.0;                                       // K': |t| <= K + 1 / ratio
  const double q0 = level_zero_modulus(context);
  const double output_scale = config.output_scale.value_or(context.params().scale);

  // 3. The trace (sparse slots), CoeffToSlot, ending at the scale EvalMod
  // works at; real and imaginary parts.
  at.coeff_to_slot = b.node_count();
  for (std::size_t step = n; step < full; step *= 2) v = b.add(v, b.rotate(v, static_cast<long>(step)));
  const double trace_gain = static_cast<double>(full / n);
  const int eval_level = context.max_level() - config.coeff_to_slot_levels;
  const double eval_scale = detail::rescale_divisor(b, eval_level);
  std::vector<Matrix> cts = spread(coeff_to_slot_matrices(context.ring_degree(), n, config.coeff_to_slot_levels),
                                   b.state(v).scale / (2.0 * q0 * interval * trace_gain), n);
  if (packed) cts.back() = tall(cts.back());
  v = apply_all(b, v, cts, "coeff_to_slot", eval_scale, config);
  const ValueRef conjugated = b.conjugate(v);
  const ValueRef real = b.add(v, conjugated);
  const auto imaginary = [&] { return b.multiply_plain(b.sub(v, conjugated), unit(b, "minus_i", {0.0, -1.0})); };

  // 4. EvalMod on both parts: one ciphertext [real; imaginary] when packed.
  at.eval_mod = b.node_count();
  const Polynomial cos = cosine(config, interval);
  std::vector<Matrix> stc = spread(slot_to_coeff_matrices(context.ring_degree(), n, config.slot_to_coeff_levels),
                                   q0 / (2.0 * std::numbers::pi * delta * static_cast<double>(up)), n);
  if (config.real_only) {
    // A real message's coefficients are antisymmetric (c_(N-k) = -c_k), so
    // the lower half, the real parts, holds all of it: one EvalMod, then
    // z = 2 Re(U0 R D r) with D halving slot 0 (c_0 is counted twice).
    at.coefficients_real = real;
    v = at.eval_mod_real = eval_mod(b, real, cos, config, eval_scale);
    at.slot_to_coeff = b.node_count();
    stc.front() = halved_first_column(stc.front());
  } else if (packed) {
    at.coefficients_real = b.add(real, b.rotate(imaginary(), static_cast<long>(n)));
    v = at.eval_mod_real = eval_mod(b, at.coefficients_real, cos, config, eval_scale);
    at.slot_to_coeff = b.node_count();
    stc.front() = wide_with_i(stc.front());  // recombines real + i imaginary
  } else {
    at.coefficients_real = real;
    const ValueRef real_mod = at.eval_mod_real = eval_mod(b, real, cos, config, eval_scale);
    const ValueRef imaginary_mod = eval_mod(b, imaginary(), cos, config, eval_scale);
    at.slot_to_coeff = b.node_count();
    v = b.add(real_mod, b.multiply_plain(imaginary_mod, unit(b, "plus_i", {0.0, 1.0})));
  }

  // 5. SlotToCoeff.
  v = apply_all(b, v, stc, "slot_to_coeff", output_scale, config);
  if (config.real_only) v = b.add(v, b.conjugate(v));
  at.end = b.node_count();
  return v;
}

ValueState input_state(const Context& context, int level, double scale) {
  ValueState x;
  x.context_id = context.id();
  x.word_size = context.word_size();
  x.level = level;
  x.scale = scale;
  return x;
}

// The Bootstrapper's program: x at level 0 to y.
ProgramBuilder bootstrap_builder(std::shared_ptr<const Context> context, const BootstrapConfig& config,
                                 std::optional<double> input_scale, BootstrapStages* stages = nullptr) {
  ProgramBuilder b(context, "bootstrap");
  const double delta = input_scale.value_or(context->params().scale);
  b.output("y", bootstrap(b, b.input("x", input_state(*context, 0, delta)), config, stages));
  return b;
}

}  // namespace

ValueRef bootstrap(ProgramBuilder& b, ValueRef x, const BootstrapConfig& config, BootstrapStages* stages) {
  const Context& context = *b.context();
  check_config(context, config);
  const int bound = overflow_bound(context, config);
  BootstrapStages at;
  // 1-2. Up-scaling and ModRaise.
  at.mod_raise = b.node_count();
  ValueRef v = detail::at_level(b, x, 0);
  double delta = b.state(v).scale;
  if (config.real_only) {
    // x + conj(x): 2 Re(m) read at scale delta is Re(m) at scale 2 delta.
    v = b.add(v, b.conjugate(v));
    delta *= 2.0;
  }
  const std::int64_t up = up_scaling(context, delta, config);
  if (up > 1) v = b.multiply_integer(v, up);
  v = uses_encapsulation(context, config) ? b.mod_raise_encapsulated(v) : b.mod_raise(v);
  v = from_raised(b, v, config, delta, up, bound, at);
  if (stages) *stages = at;
  return v;
}

runtime::KeyRequirements Bootstrapper::required_keys(std::shared_ptr<const Context> context,
                                                     const BootstrapConfig& config, std::optional<double> input_scale) {
  return bootstrap_builder(std::move(context), config, input_scale).required_keys();
}

Bootstrapper::Bootstrapper(const Engine& engine, const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
                           const BootstrapConfig& config, std::optional<double> input_scale)
    : engine_(&engine) {
  link_program(relinearization_key, galois_keys, config, input_scale);
}

Bootstrapper::Bootstrapper(const Engine& engine, const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
                           const SparseEncapsulationKeys& encapsulation, const BootstrapConfig& config,
                           std::optional<double> input_scale)
    : engine_(&engine),
      encapsulation_(std::make_shared<const runtime::SparseEncapsulation>(
          runtime::upload_sparse_encapsulation(engine, encapsulation))) {
  BootstrapConfig with_weight = config;
  with_weight.ephemeral_hamming_weight = encapsulation.hamming_weight;
  link_program(relinearization_key, galois_keys, with_weight, input_scale);
}

void Bootstrapper::link_program(const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
                                const BootstrapConfig& config, std::optional<double> input_scale) {
  BootstrapConfig resolved = config;
  if (!resolved.rotate_sums) resolved.rotate_sums = engine_->backend().supports_rotate_sum();
  const ProgramBuilder b = bootstrap_builder(engine_->context_ptr(), resolved, input_scale, &stages_);
  runtime::Materials materials;
  materials.relinearization_key = &relinearization_key;
  materials.galois_keys = &galois_keys;
  materials.sparse_encapsulation = encapsulation_.get();
  for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
  executable_ = runtime::link(b.prepare(), *engine_, materials);
}

Ciphertext Bootstrapper::bootstrap(const Ciphertext& x) const {
  const Ciphertext at_zero = x.state.level > 0 ? engine_->drop_to_level(x, 0) : x;
  const runtime::ValueTree out = executable_.run(runtime::ValueTree(runtime::ValueTree::Map{{"x", at_zero}}));
  return out.at("y").ciphertext();
}

int Bootstrapper::output_level() const { return program().state(program().program().outputs().front().second).level; }
double Bootstrapper::output_scale() const {
  return program().state(program().program().outputs().front().second).scale;
}

}  // namespace fhelium::circuits
