// The circuits library on the 32-bit word family's rational chain (several
// primes per level, rescales that add a terminal prime, drops through a
// rescale): polynomials, a linear transform and align against the clear
// evaluator, with exact levels and scales.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/polynomial.hpp"
#include "fhelium/circuits/slots.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "helpers.hpp"

namespace fhelium::circuits {
namespace {

using runtime::ProgramBuilder;
using runtime::ValueRef;
using test::Fixture;
using test::Message;

class Int32Circuits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { f_ = new Fixture(test::small_int32_params(11), 9); }
  static void TearDownTestSuite() {
    delete f_;
    f_ = nullptr;
  }

  struct Outcome {
    ValueState state;
    Message decrypted;
    Message clear;
  };

  // Encrypts xm at `level` (scale: the context's), runs y with exactly the
  // keys the program declares, and the same program on clear slots.
  Outcome run(ProgramBuilder& b, ValueRef y, const Message& xm, int level) {
    Fixture& f = *f_;
    b.output("y", y);
    const auto prepared = b.prepare();
    const auto keys = prepared.required_keys();
    std::vector<long> steps(keys.rotation_steps.begin(), keys.rotation_steps.end());
    const RelinKey relin = f.relin_key();
    const GaloisKeys galois = f.galois_keys(steps, keys.conjugation);
    runtime::Materials materials;
    materials.relinearization_key = &relin;
    materials.galois_keys = &galois;
    for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
    const runtime::Executable exe = runtime::link(prepared, f.engine, materials);
    const auto result = exe.run(runtime::ValueTree(runtime::ValueTree::Map{{"x", f.encrypt(xm, level)}}));
    Outcome out;
    out.state = result.at("y").ciphertext().state;
    out.decrypted = f.decrypt(result.at("y").ciphertext());
    out.clear = runtime::evaluate_clear(prepared.program(), {{"x", xm}}, b.constant_values(), f.slots()).at("y");
    EXPECT_EQ(out.state, b.state(y));
    return out;
  }

  ProgramBuilder builder(int level) {
    ProgramBuilder b(f_->context, "int32");
    b.input("x", f_->encrypt(Message(1), level).state);
    return b;
  }

  Message real_message() {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    Message m(f_->slots());
    for (auto& v : m) v = d(rng_);
    return m;
  }

  std::mt19937_64 rng_{3};
  static Fixture* f_;
};

Fixture* Int32Circuits::f_ = nullptr;

TEST_F(Int32Circuits, PolynomialsFromEveryKindOfLevelKeepTheirExactScale) {
  for (int degree : {3, 7, 15}) {
    for (int top : {7, 6, 5}) {  // both terminals, none, t0 only
      SCOPED_TRACE("degree " + std::to_string(degree) + " from level " + std::to_string(top));
      std::uniform_real_distribution<double> d(-1.0, 1.0);
      Polynomial p;
      p.basis = PolynomialBasis::chebyshev;
      for (int i = 0; i <= degree; ++i) p.coefficients.push_back(d(rng_) / std::sqrt(i + 1.0));
      ProgramBuilder b = builder(top);
      const ValueRef y = evaluate_polynomial(b, ValueRef{0}, p);
      const Message xm = real_message();
      const Outcome out = run(b, y, xm, top);
      EXPECT_EQ(out.state.level, top - polynomial_depth(p));
      EXPECT_LT(std::fabs(out.state.scale / f_->scale() - 1), 1e-12);
      for (std::size_t i = 0; i < xm.size(); ++i) ASSERT_LT(std::abs(out.clear[i] - p.evaluate(xm[i])), 1e-9) << i;
      EXPECT_LT(test::max_error(out.clear, out.decrypted), 1e-5);
    }
  }
}

TEST_F(Int32Circuits, LinearTransformMatchesTheClearProduct) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<std::vector<double>> matrix(16, std::vector<double>(16));
  for (auto& row : matrix) {
    for (auto& v : row) v = d(rng_);
  }
  const LinearTransform lt = LinearTransform::from_matrix(matrix, f_->slots());
  for (int level : {7, 6, 5}) {
    SCOPED_TRACE(level);
    ProgramBuilder b = builder(level);
    const ValueRef y = lt.apply(b, ValueRef{0});
    Message x(16);
    const Message random = real_message();
    std::copy(random.begin(), random.begin() + 16, x.begin());
    const Outcome out = run(b, y, lt.pack(x), level);
    EXPECT_EQ(out.state.level, level - 1);
    EXPECT_LT(std::fabs(out.state.scale / f_->scale() - 1), 1e-12);
    EXPECT_LT(test::max_error(out.clear, out.decrypted), 1e-4);
  }
}

TEST_F(Int32Circuits, AlignReachesEveryLevelAndScale) {
  const Message xm = f_->random_message(1.0);
  for (int level = 0; level < 7; ++level) {
    SCOPED_TRACE(level);
    ProgramBuilder b = builder(7);
    const double target = level == 0 ? f_->scale() : std::ldexp(1.0, 35);
    const ValueRef y = align(b, ValueRef{0}, level, target);
    const Outcome out = run(b, y, xm, 7);
    EXPECT_EQ(out.state.level, level);
    EXPECT_LT(std::fabs(out.state.scale / target - 1), 1e-12);
    EXPECT_LT(test::max_error(xm, out.decrypted), 1e-5);
  }
}

}  // namespace
}  // namespace fhelium::circuits
