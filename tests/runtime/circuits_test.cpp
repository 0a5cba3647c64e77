// The circuits library against the clear evaluator (the same Program in
// double precision) and against the mathematics it implements, with exact
// levels, scales and key lists; bit-exact between cpu and the backend named
// by FHELIUM_RUNTIME_TEST_BACKEND when one is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/polynomial.hpp"
#include "fhelium/circuits/slots.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::circuits {
namespace {

using runtime::KeyRequirements;
using runtime::Materials;
using runtime::PreparedProgram;
using runtime::ValueTree;
using test::Fixture;
using test::max_error;
using test::Message;

constexpr int kLevels = 8;

// One encrypted run of a circuit program with exactly the keys it declares,
// and the same program on clear slots.
std::size_t count_nodes(const runtime::Program& program, runtime::OpKind op) {
  return static_cast<std::size_t>(std::count_if(program.nodes().begin(), program.nodes().end(),
                                                [op](const runtime::Node& n) { return n.op == op; }));
}

struct Outcome {
  PreparedProgram prepared;
  ValueState state;
  Message decrypted;
  Message clear;
  std::vector<u64> residues;
};

class Circuits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    f_ = new Fixture(test::small_params(11, kLevels), 5);
    const test::TestBackend other = test::runtime_test_backend();
    skip_ = other.skip_reason;
    if (other.backend) other_ = new Engine(f_->context, other.backend);
  }
  static void TearDownTestSuite() {
    delete other_;
    delete f_;
    other_ = nullptr;
  }

  Fixture& f() { return *f_; }
  std::size_t slots() { return f().slots(); }
  ProgramBuilder builder(const ValueState& x_state) {
    ProgramBuilder b(f().context, "circuit");
    b.input("x", x_state);
    return b;
  }
  ValueState state_at(int level) { return f().encrypt(Message(1), level).state; }

  Message real_message(double low, double high) {
    std::uniform_real_distribution<double> d(low, high);
    Message m(slots());
    for (auto& v : m) v = d(rng_);
    return m;
  }

  // Runs on cpu, and on the other backend (bit-exact) when there is one:
  // the host keys and input ciphertext are made once and uploaded to each.
  Outcome run(ProgramBuilder& b, ValueRef y, const Message& xm, int level) {
    b.output("y", y);
    Fixture& fx = f();
    Outcome out;
    out.prepared = b.prepare();
    const KeyRequirements keys = out.prepared.required_keys();
    std::optional<HostSwitchKey> relin;
    if (keys.relinearization) relin = fx.keygen.relinearization_key(fx.sk);
    std::vector<HostSwitchKey> galois;
    for (long step : keys.rotation_steps) {
      galois.push_back(fx.keygen.galois_key(fx.sk, fx.context->galois_element(step)));
    }
    if (keys.conjugation) galois.push_back(fx.keygen.galois_key(fx.sk, fx.context->conjugation_element()));
    const HostValue x = fx.encryptor.encrypt(fx.encoder.encode(xm, level, fx.scale()), fx.pk);
    auto run_on = [&](const Engine& engine) {
      std::optional<RelinKey> relin_key;
      if (relin) relin_key = engine.upload_relinearization_key(*relin);
      const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
      Materials materials;
      materials.relinearization_key = relin_key ? &*relin_key : nullptr;
      materials.galois_keys = &galois_keys;
      for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
      const runtime::Executable exe = runtime::link(out.prepared, engine, materials);
      const ValueTree result = exe.run(ValueTree(ValueTree::Map{{"x", engine.upload_ciphertext(x)}}));
      return engine.download(result.at("y").ciphertext());
    };
    const HostValue result = run_on(fx.engine);
    out.state = result.state;
    out.decrypted = fx.encoder.decode(fx.decryptor.decrypt(result, fx.sk), fx.slots());
    out.residues = result.data;
    out.clear = runtime::evaluate_clear(out.prepared.program(), {{"x", xm}}, b.constant_values(), fx.slots()).at("y");
    EXPECT_EQ(out.state, b.state(y));
    const bool other_runs_it = other_ && (other_->backend().supports_rotate_sum() ||
                                          count_nodes(out.prepared.program(), runtime::OpKind::rotate_sum) == 0);
    if (other_runs_it) {
      EXPECT_TRUE(run_on(*other_).data == out.residues) << "cpu and the test backend differ";
    }
    return out;
  }

  std::mt19937_64 rng_{99};
  static Fixture* f_;
  static Engine* other_;  // the test backend's engine on f_'s context, if any
  static std::string skip_;
};

Fixture* Circuits::f_ = nullptr;
Engine* Circuits::other_ = nullptr;
std::string Circuits::skip_;

double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

// ---- polynomials ----

int test_ceil_log2(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}


struct PolynomialCase {
  PolynomialBasis basis;
  int degree;
  double a, b;
};

class PolynomialCircuit : public Circuits, public ::testing::WithParamInterface<PolynomialCase> {};

TEST_P(PolynomialCircuit, ExactDepthAndScaleAndTheClearValues) {
  const PolynomialCase c = GetParam();
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  Polynomial p;
  p.basis = c.basis;
  p.a = c.a;
  p.b = c.b;
  for (int i = 0; i <= c.degree; ++i) {
    // Monomials decay so that the sum stays of order one on [-1, 1].
    p.coefficients.push_back(d(rng_) * (c.basis == PolynomialBasis::monomial ? 1.0 / (i + 1) : 1.0 / std::sqrt(i + 1.0)));
  }
  const int top = f().context->max_level();
  const int depth = polynomial_depth(p);
  const int expected_depth = test_ceil_log2(c.degree + 1) + ((c.a != -1.0 || c.b != 1.0) ? 1 : 0);
  ASSERT_EQ(depth, expected_depth);
  ProgramBuilder b = builder(state_at(top));
  const ValueRef y = evaluate_polynomial(b, ValueRef{0}, p);
  const Message xm = real_message(c.a, c.b);
  const Outcome out = run(b, y, xm, top);

  EXPECT_EQ(out.state.level, top - depth);
  EXPECT_LT(relative(out.state.scale, f().scale()), 1e-12);
  EXPECT_EQ(out.prepared.required_keys().relinearization, c.degree >= 2);
  EXPECT_TRUE(out.prepared.required_keys().rotation_steps.empty());
  std::size_t products = 0;
  for (const auto& node : out.prepared.program().nodes()) products += node.op == runtime::OpKind::multiply_relinearize_rescale;
  // Baby-step giant-step: about 2 sqrt(2 (d+1)) + depth products (119: 24), not d - 1.
  EXPECT_LE(static_cast<double>(products), 2 * std::sqrt(2.0 * (c.degree + 1)) + depth) << products;
  // Leaves at one level share their powers' drops: no value is dropped to a level twice.
  std::set<std::pair<int, int>> drops;
  for (const auto& node : out.prepared.program().nodes()) {
    if (node.op != runtime::OpKind::drop_to_level) continue;
    EXPECT_TRUE(drops.insert({node.args[0], node.level}).second)
        << "value " << node.args[0] << " to level " << node.level;
  }
  // The program's clear run is the polynomial (the algorithm), and the
  // encrypted run is the program's clear run (the arithmetic).
  for (std::size_t i = 0; i < slots(); ++i) ASSERT_LT(std::abs(out.clear[i] - p.evaluate(xm[i])), 1e-9) << i;
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
}

std::vector<PolynomialCase> polynomial_cases() {
  std::vector<PolynomialCase> cases;
  for (int degree : {1, 2, 3, 7, 8, 9, 15, 16, 17, 119}) {
    cases.push_back({PolynomialBasis::monomial, degree, -1.0, 1.0});
    cases.push_back({PolynomialBasis::chebyshev, degree, -1.0, 1.0});
  }
  for (int degree : {1, 5, 31, 119}) cases.push_back({PolynomialBasis::chebyshev, degree, -4.0, 2.0});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Degrees, PolynomialCircuit, ::testing::ValuesIn(polynomial_cases()),
                         [](const auto& param_info) {
                           const PolynomialCase& c = param_info.param;
                           return std::string(c.basis == PolynomialBasis::monomial ? "monomial" : "chebyshev") +
                                  std::to_string(c.degree) + (c.a == -1.0 ? "" : "_interval");
                         });

TEST_F(Circuits, ChebyshevInterpolantApproximatesTheFunctionEncrypted) {
  const auto f_exp = [](double v) { return std::exp(v / 2); };
  const Polynomial p = Polynomial::chebyshev_interpolant(f_exp, 23, -4.0, 2.0);
  const int top = f().context->max_level();
  ProgramBuilder b = builder(state_at(top));
  const ValueRef y = evaluate_polynomial(b, ValueRef{0}, p, {.threshold = 1e-12, .output_scale = std::ldexp(1.0, 36)});
  const Message xm = real_message(-4.0, 2.0);
  const Outcome out = run(b, y, xm, top);
  EXPECT_EQ(out.state.scale, b.state(y).scale);
  EXPECT_LT(relative(out.state.scale, std::ldexp(1.0, 36)), 1e-12);
  for (std::size_t i = 0; i < slots(); ++i) ASSERT_LT(std::abs(out.decrypted[i] - f_exp(xm[i].real())), 1e-4) << i;
}

TEST_F(Circuits, PolynomialAtALowerLevelAndWithSkippedCoefficients) {
  Polynomial p;  // 0.5 + x^3 - 1e-9 x^8: the last term is below the threshold
  p.coefficients = {0.5, 0, 0, 1.0, 0, 0, 0, 0, -1e-9};
  EXPECT_EQ(polynomial_depth(p), 4);
  EXPECT_EQ(polynomial_depth(p, 1e-6), 2);
  ProgramBuilder b = builder(state_at(3));
  const ValueRef y = evaluate_polynomial(b, ValueRef{0}, p, {.threshold = 1e-6, .output_scale = std::nullopt});
  const Message xm = real_message(-1.0, 1.0);
  const Outcome out = run(b, y, xm, 3);
  EXPECT_EQ(out.state.level, 1);
  for (std::size_t i = 0; i < slots(); ++i) {
    ASSERT_LT(std::abs(out.decrypted[i] - (0.5 + std::pow(xm[i].real(), 3))), 1e-5) << i;
  }
}

TEST_F(Circuits, PolynomialWrongUseIsRefused) {
  ProgramBuilder b = builder(state_at(2));
  Polynomial deep;
  deep.coefficients.assign(9, 1.0);  // degree 8: 4 levels
  EXPECT_THROW(evaluate_polynomial(b, ValueRef{0}, deep), StateError);
  Polynomial constant;
  constant.coefficients = {1.0, 1e-9};
  EXPECT_THROW(evaluate_polynomial(b, ValueRef{0}, constant, {.threshold = 1e-6, .output_scale = std::nullopt}), InvalidArgumentError);
  EXPECT_THROW(evaluate_polynomial(b, ValueRef{0}, Polynomial{}), InvalidArgumentError);
  Polynomial bad_interval{PolynomialBasis::chebyshev, {0.0, 1.0}, 1.0, 1.0};
  EXPECT_THROW(evaluate_polynomial(b, ValueRef{0}, bad_interval), InvalidArgumentError);
  Polynomial not_finite;
  not_finite.coefficients = {0.0, std::nan("")};
  EXPECT_THROW(evaluate_polynomial(b, ValueRef{0}, not_finite), InvalidArgumentError);
  b.output("x_out", ValueRef{0});
  EXPECT_EQ(b.build().nodes().size(), 0u);  // refused before anything was added
}

// ---- linear transforms ----

// Fewest baby + giant rotations over every n1, by brute force.
std::size_t fewest_rotations(const std::vector<long>& diagonals, long period) {
  std::size_t best = SIZE_MAX;
  for (long n1 = 1; n1 <= period; ++n1) {
    std::set<long> baby, giant;
    for (long k : diagonals) {
      if (k % n1 != 0) baby.insert(k % n1);
      if (k - k % n1 != 0) giant.insert(k - k % n1);
    }
    best = std::min(best, baby.size() + giant.size());
  }
  return best;
}

struct MatrixCase {
  std::size_t rows, cols;
};

class LinearTransformCircuit : public Circuits, public ::testing::WithParamInterface<MatrixCase> {};

TEST_P(LinearTransformCircuit, MatchesTheProductWithExactKeysLevelAndScale) {
  const auto [rows, cols] = GetParam();
  const auto matrix = test::random_matrix(rows, cols, rng_);
  const LinearTransform lt = LinearTransform::from_matrix(matrix, slots());
  EXPECT_EQ(lt.key_switches(), fewest_rotations(lt.diagonal_indices(), static_cast<long>(lt.input_period())));
  const int level = f().context->max_level() - 1;
  ProgramBuilder b = builder(state_at(level));
  const ValueRef y = lt.apply(b, ValueRef{0});
  Message x(cols);
  const Message random = real_message(-1.0, 1.0);
  std::copy(random.begin(), random.begin() + static_cast<long>(cols), x.begin());
  const Message xm = lt.pack(x);
  const Outcome out = run(b, y, xm, level);

  EXPECT_EQ(out.state.level, level - 1);
  EXPECT_LT(relative(out.state.scale, f().scale()), 1e-12);
  const auto needed = out.prepared.required_keys();
  const auto steps = lt.rotation_steps();
  EXPECT_EQ(needed.rotation_steps, std::set<long>(steps.begin(), steps.end()));
  EXPECT_FALSE(needed.relinearization);
  // y = M x in the first `rows` slots of every output period, zeros in the padding.
  for (std::size_t i = 0; i < slots(); ++i) {
    const std::size_t r = i % lt.output_period();
    std::complex<double> expected = 0;
    if (r < rows) {
      for (std::size_t j = 0; j < cols; ++j) expected += matrix[r][j] * x[j];
    }
    ASSERT_LT(std::abs(out.clear[i] - expected), 1e-12) << i;
  }
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5 * static_cast<double>(cols));
  EXPECT_LT(max_error(lt.apply_clear(xm), out.clear), 1e-12);
  EXPECT_LE(lt.diagonal_indices().size(), lt.input_period());  // one diagonal per column at most
}

TEST_F(Circuits, EveryRotationHoistedWhenAsked) {
  const auto matrix = test::random_matrix(16, 16, rng_);
  const LinearTransform lt = LinearTransform::from_matrix(matrix, slots()).with_baby_step(16);
  EXPECT_TRUE(lt.giant_steps().empty());
  EXPECT_EQ(lt.baby_steps().size(), 15u);
  const int top = f().context->max_level();
  ProgramBuilder b = builder(state_at(top));
  const Message x = real_message(-1.0, 1.0);
  const Message xm = lt.pack(Message(x.begin(), x.begin() + 16));
  const Outcome out = run(b, lt.apply(b, ValueRef{0}), xm, top);
  EXPECT_LT(max_error(lt.apply_clear(xm), out.clear), 1e-12);
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-4);
  EXPECT_THROW(lt.with_baby_step(17), InvalidArgumentError);
  EXPECT_THROW(lt.with_baby_step(0), InvalidArgumentError);
}

// A band of 2w - 1 diagonals around 0 at stride s (a merged group of FFT
// stages): Horner giants need the keys for n1 s and the first giant only,
// issue as many rotations (plus one at most), and give the same product.
TEST_F(Circuits, HornerGiantsNeedFewerKeysForTheSameProduct) {
  std::map<long, Slots> diagonals;
  const long stride = 4;
  for (long j = -15; j <= 15; ++j) diagonals[j * stride] = real_message(-1.0, 1.0);
  const LinearTransform plain = LinearTransform::from_diagonals(diagonals, slots(), slots());
  const LinearTransform horner = plain.with_horner_giants();
  EXPECT_TRUE(horner.horner_giants());
  EXPECT_FALSE(horner.with_horner_giants(false).horner_giants());
  EXPECT_EQ(horner.baby_steps(), plain.baby_steps());
  EXPECT_LE(horner.giant_steps().size(), 2u);
  EXPECT_LT(horner.giant_steps().size(), plain.giant_steps().size());
  EXPECT_LT(horner.rotation_steps().size(), plain.rotation_steps().size());
  EXPECT_LE(horner.key_switches(), plain.key_switches() + 1);
  const int top = f().context->max_level();
  const Message xm = f().random_message(1.0);
  ProgramBuilder b = builder(state_at(top));
  const Outcome out = run(b, horner.apply(b, ValueRef{0}), xm, top);
  const auto steps = horner.rotation_steps();
  EXPECT_EQ(out.prepared.required_keys().rotation_steps, std::set<long>(steps.begin(), steps.end()));
  EXPECT_EQ(out.state.level, top - 1);
  EXPECT_LT(max_error(plain.apply_clear(xm), out.clear), 1e-12);
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
}

// The same band with its giant rotations as one rotate_sum: one node holds
// every giant step (and the unrotated group), no rotate is left, the keys
// are the same, and the product is as close to the clear one.
TEST_F(Circuits, RotateSumGiantsOneNodeSameProduct) {
  std::map<long, Slots> diagonals;
  for (long j = -15; j <= 15; ++j) diagonals[j * 4] = real_message(-1.0, 1.0);
  const LinearTransform plain = LinearTransform::from_diagonals(diagonals, slots(), slots());
  const LinearTransform summed = plain.with_rotate_sum();
  EXPECT_TRUE(summed.rotate_sum());
  EXPECT_FALSE(summed.with_rotate_sum(false).rotate_sum());
  EXPECT_FALSE(summed.part(0, 2).rotate_sum());  // parts keep the residue contract
  EXPECT_EQ(summed.key_switches(), plain.key_switches());
  const int top = f().context->max_level();
  const Message xm = f().random_message(1.0);
  ProgramBuilder b = builder(state_at(top));
  const Outcome out = run(b, summed.apply(b, ValueRef{0}), xm, top);
  const runtime::Program& program = out.prepared.program();
  EXPECT_EQ(count_nodes(program, runtime::OpKind::rotate_sum), 1u);
  EXPECT_EQ(count_nodes(program, runtime::OpKind::rotate), 0u);
  for (const runtime::Node& node : program.nodes()) {
    if (node.op != runtime::OpKind::rotate_sum) continue;
    EXPECT_EQ(node.steps.size(), plain.giant_groups());
    const auto giants = plain.giant_steps();
    EXPECT_EQ(std::set<long>(node.steps.begin(), node.steps.end()).size(), giants.size() + 1);  // and 0
  }
  const auto steps = plain.rotation_steps();
  EXPECT_EQ(out.prepared.required_keys().rotation_steps, std::set<long>(steps.begin(), steps.end()));
  EXPECT_EQ(out.state.level, top - 1);
  EXPECT_LT(max_error(plain.apply_clear(xm), out.clear), 1e-12);
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTransformCircuit,
                         ::testing::Values(MatrixCase{1, 1}, MatrixCase{4, 4}, MatrixCase{16, 16}, MatrixCase{64, 64},
                                           MatrixCase{3, 5}, MatrixCase{10, 4}, MatrixCase{32, 20}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.rows) + "x" + std::to_string(param_info.param.cols);
                         });

TEST_F(Circuits, SparseFullSlotTransformUsesFewestRotations) {
  // Diagonals as in one stage of a homomorphic FFT: 0, +-1 and +-8 over all slots.
  std::map<long, Slots> diagonals;
  for (long k : {0L, 1L, -1L, 8L, -8L}) diagonals[k] = real_message(-1.0, 1.0);
  const LinearTransform lt = LinearTransform::from_diagonals(diagonals, slots(), slots());
  EXPECT_EQ(lt.diagonal_indices().size(), 5u);
  EXPECT_EQ(lt.key_switches(), fewest_rotations(lt.diagonal_indices(), static_cast<long>(slots())));
  const int top = f().context->max_level();
  ProgramBuilder b = builder(state_at(top));
  const ValueRef y = lt.apply(b, ValueRef{0});
  const Message xm = f().random_message(1.0);
  const Outcome out = run(b, y, xm, top);
  const auto steps = lt.rotation_steps();
  EXPECT_EQ(out.prepared.required_keys().rotation_steps, std::set<long>(steps.begin(), steps.end()));
  Message expected(slots());
  for (std::size_t i = 0; i < slots(); ++i) {
    for (const auto& [k, d] : diagonals) {
      const std::size_t j = (i + static_cast<std::size_t>(k + static_cast<long>(slots()))) % slots();
      expected[i] += d[i] * xm[j];
    }
  }
  EXPECT_LT(max_error(expected, out.clear), 1e-12);
  EXPECT_LT(max_error(expected, out.decrypted), 1e-5);
}

TEST_F(Circuits, LinearTransformWrongUseIsRefused) {
  EXPECT_THROW(LinearTransform::from_matrix(std::vector<std::vector<double>>{}, slots()), InvalidArgumentError);
  EXPECT_THROW(LinearTransform::from_matrix(std::vector<std::vector<double>>{{1, 2}, {3}}, slots()),
               InvalidArgumentError);
  EXPECT_THROW(LinearTransform::from_matrix(test::random_matrix(slots() + 1, 1, rng_), slots()), InvalidArgumentError);
  EXPECT_THROW(LinearTransform::from_diagonals({{0, Slots(3)}}, 4, slots()), InvalidArgumentError);
  EXPECT_THROW(LinearTransform::from_diagonals({{0, Slots(4, 1.0)}}, 3, slots()), InvalidArgumentError);
  EXPECT_THROW(LinearTransform::from_diagonals({{0, Slots(4)}}, 4, slots()), InvalidArgumentError);  // all zero
  EXPECT_THROW(LinearTransform::from_diagonals({{1, Slots(4, 1.0)}, {-3, Slots(4, 1.0)}}, 4, slots()),
               InvalidArgumentError);  // 1 and -3 are the same diagonal
  const LinearTransform other_slots = LinearTransform::from_matrix(test::random_matrix(4, 4, rng_), slots() / 2);
  ProgramBuilder b = builder(state_at(2));
  EXPECT_THROW(other_slots.apply(b, ValueRef{0}), InvalidArgumentError);
}

// ---- a user's circuit: the worked example of docs/circuits.md ----

// y = x^2 + w x = (x + w) x: two levels, x's scale exactly, relinearization.
ValueRef square_plus_weighted(ProgramBuilder& b, ValueRef x, const Slots& w) {
  const ValueState s = b.state(x);
  if (s.level < 2) {
    throw StateError("square_plus_weighted: x is at level " + std::to_string(s.level) + ", expected level 2 or higher");
  }
  const auto& q = b.context()->q();
  const double q_top = static_cast<double>(q[static_cast<std::size_t>(s.level)].value);
  const double q_next = static_cast<double>(q[static_cast<std::size_t>(s.level - 1)].value);
  ValueRef u = b.rescale(b.multiply_scalar(x, 1.0, q_next * q_top / s.scale));
  u = b.add(u, b.constant(b.fresh_name("w"), w, b.state(u).scale));
  return b.multiply_relinearize_rescale(u, b.drop_to_level(x, s.level - 1));
}

TEST_F(Circuits, TheManualsOwnCircuitDoesWhatItStates) {
  const int top = f().context->max_level();
  const Message xm = f().random_message(1.0), w = f().random_message(1.0);
  ProgramBuilder b = builder(state_at(top));
  const Outcome out = run(b, square_plus_weighted(b, ValueRef{0}, w), xm, top);
  EXPECT_EQ(out.state.level, top - 2);
  EXPECT_LT(relative(out.state.scale, f().scale()), 1e-12);
  EXPECT_TRUE(b.required_keys().relinearization);
  EXPECT_TRUE(b.required_keys().rotation_steps.empty());
  for (std::size_t i = 0; i < slots(); ++i) ASSERT_LT(std::abs(out.clear[i] - (xm[i] * xm[i] + w[i] * xm[i])), 1e-12);
  EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
  ProgramBuilder low = builder(state_at(1));
  EXPECT_THROW(square_plus_weighted(low, ValueRef{0}, w), StateError);
  EXPECT_EQ(low.node_count(), 0u);
}

// ---- slots ----

TEST_F(Circuits, SumSlotsAndInnerProducts) {
  const int top = f().context->max_level();
  const Message xm = f().random_message(1.0);
  {
    ProgramBuilder b = builder(state_at(top));
    const Outcome out = run(b, sum_slots(b, ValueRef{0}, 16), xm, top);
    EXPECT_EQ(out.state.level, top);
    EXPECT_EQ(out.prepared.required_keys().rotation_steps, (std::set<long>{1, 2, 4, 8}));
    std::complex<double> first = 0;
    for (std::size_t i = 0; i < 16; ++i) first += xm[i];
    EXPECT_LT(std::abs(out.clear[0] - first), 1e-12);
    EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
  }
  {
    const Message w = f().random_message(1.0);
    ProgramBuilder b = builder(state_at(top));
    const Outcome out = run(b, inner_product(b, ValueRef{0}, w, 8), xm, top);
    EXPECT_EQ(out.state.level, top - 1);
    EXPECT_LT(relative(out.state.scale, f().scale()), 1e-12);
    std::complex<double> first = 0;
    for (std::size_t i = 0; i < 8; ++i) first += xm[i] * w[i];
    EXPECT_LT(std::abs(out.clear[0] - first), 1e-12);
    EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
  }
  {
    ProgramBuilder b = builder(state_at(top));
    const ValueRef low = b.rescale(b.multiply_scalar(ValueRef{0}, 1.0, f().scale()));
    const Outcome out = run(b, inner_product(b, ValueRef{0}, low, 4), xm, top);
    EXPECT_EQ(out.state.level, top - 2);
    EXPECT_TRUE(out.prepared.required_keys().relinearization);
    std::complex<double> first = 0;
    for (std::size_t i = 0; i < 4; ++i) first += xm[i] * xm[i];
    EXPECT_LT(std::abs(out.clear[0] - first), 1e-12);
    EXPECT_LT(max_error(out.clear, out.decrypted), 1e-5);
  }
  ProgramBuilder b = builder(state_at(top));
  EXPECT_THROW(sum_slots(b, ValueRef{0}, 3), InvalidArgumentError);
  EXPECT_THROW(sum_slots(b, ValueRef{0}, 2 * slots()), InvalidArgumentError);
}

TEST_F(Circuits, AlignReachesLevelAndScaleExactly) {
  const int top = f().context->max_level();
  const Message xm = f().random_message(1.0);
  const double target = std::ldexp(1.0, 33);
  ProgramBuilder b = builder(state_at(top));
  const ValueRef y = align(b, ValueRef{0}, 2, target);
  const Outcome out = run(b, y, xm, top);
  EXPECT_EQ(out.state.level, 2);
  EXPECT_LT(relative(out.state.scale, target), 1e-12);
  EXPECT_LT(max_error(xm, out.decrypted), 1e-5);

  ProgramBuilder same = builder(state_at(top));
  const ValueRef dropped = align(same, ValueRef{0}, 3, f().scale());  // same scale: a drop, no level used
  EXPECT_EQ(same.state(dropped).level, 3);
  EXPECT_THROW(align(same, dropped, 3, target), StateError);   // setting a scale needs a level above
  EXPECT_THROW(align(same, dropped, 4, f().scale()), StateError);  // cannot go up

  // A scale within Engine::add's tolerance (1e-9) but not exactly x's is set
  // where a level is left (a value read at a scale 1e-11 off is off by as
  // much), and x is kept as it is where none is.
  const double near = f().scale() * (1 + 1e-11);
  ProgramBuilder close = builder(state_at(top));
  const ValueRef exact = align(close, ValueRef{0}, 2, near);
  EXPECT_EQ(close.state(exact).level, 2);
  EXPECT_LT(relative(close.state(exact).scale, near), 1e-14);
  const Outcome set = run(close, exact, xm, top);
  EXPECT_LT(max_error(xm, set.decrypted), 1e-5);
  const ValueRef at3 = align(same, ValueRef{0}, 3, f().scale());
  const ValueRef kept = align(same, at3, 3, near);
  EXPECT_EQ(same.state(kept).level, 3);
  EXPECT_EQ(same.state(kept).scale, f().scale());
}

}  // namespace
}  // namespace fhelium::circuits
