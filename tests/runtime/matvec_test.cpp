// The reference matvec evaluator: clear-message check at several sizes, and
// its GraphProgram replays bit-identical to the uncaptured Executable.
#include "fhelium/runtime/matvec.hpp"

#include <gtest/gtest.h>

#include "fhelium/runtime/graph_program.hpp"
#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::runtime {
namespace {

std::vector<std::vector<double>> random_matrix(int size, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<std::vector<double>> a(static_cast<std::size_t>(size), std::vector<double>(static_cast<std::size_t>(size)));
  for (auto& row : a) {
    for (auto& v : row) v = d(rng);
  }
  return a;
}

std::vector<double> random_vector(int size, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> x(static_cast<std::size_t>(size));
  for (auto& v : x) v = d(rng);
  return x;
}

struct MatvecSetup {
  test::TestBackend backend = test::runtime_test_backend();
  test::Fixture f{test::small_params(12, 2), 31, 0, backend.backend};
  std::mt19937_64 rng{7};
  MatvecPlan plan;
  std::vector<std::vector<double>> matrix;
  GaloisKeys keys;
  std::optional<Executable> executable;

  explicit MatvecSetup(int size) : plan(plan_matvec(size, f.slots())), matrix(random_matrix(size, rng)) {
    const PreparedProgram prepared =
        matvec_program(plan).prepare(f.context, f.encrypt(test::Message(f.slots())).state);
    const KeyRequirements required = prepared.required_keys();
    std::vector<long> steps(required.rotation_steps.begin(), required.rotation_steps.end());
    keys = f.galois_keys(steps);
    Materials materials;
    materials.galois_keys = &keys;
    for (auto& [name, values] : matvec_constants(plan, matrix, f.slots())) materials.constants.emplace(name, values);
    executable = link(prepared, f.engine, materials);
  }

  Ciphertext encrypt(const std::vector<double>& x) { return f.encrypt(pack_cyclic(x, f.slots())); }
};

class Matvec : public ::testing::TestWithParam<int> {};

TEST_P(Matvec, MatchesTheClearProductInEverySlot) {
  MatvecSetup s(GetParam());
  const std::vector<double> x = random_vector(GetParam(), s.rng);
  const ValueTree out = s.executable->run(ValueTree(ValueTree::Map{{"x", s.encrypt(x)}}));
  const test::Message y = s.f.decrypt(out.at("y").ciphertext());
  const std::vector<double> expected = clear_matvec(s.matrix, x);
  double error = 0;
  for (std::size_t j = 0; j < y.size(); ++j) error = std::max(error, std::abs(y[j] - expected[j % expected.size()]));
  EXPECT_LT(error, 1e-5 * GetParam());
  EXPECT_EQ(s.plan.baby * s.plan.giant, GetParam());
}

TEST_P(Matvec, GraphReplaysEqualTheUncapturedEvaluator) {
  MatvecSetup s(GetParam());
  if (!s.backend.skip_reason.empty()) GTEST_SKIP() << s.backend.skip_reason;
  const ValueTree example(ValueTree::Map{{"x", s.encrypt(random_vector(GetParam(), s.rng))}});
  const Executable& exe = *s.executable;
  GraphProgram program =
      GraphProgram::capture(s.f.engine.backend(), *s.f.context, [&](const ValueTree& in) { return exe.run(in); },
                            example);
  for (int run = 0; run < 2; ++run) {
    const ValueTree in(ValueTree::Map{{"x", s.encrypt(random_vector(GetParam(), s.rng))}});
    const auto eager = s.f.engine.download(exe.run(in).at("y").ciphertext()).data;
    EXPECT_EQ(s.f.engine.download(program.replay(in).at("y").ciphertext()).data, eager);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, Matvec, ::testing::Values(1, 4, 8, 32));

TEST(MatvecPlan, RefusesSizesThatDoNotPack) {
  EXPECT_THROW(plan_matvec(3, 2048), InvalidArgumentError);
  EXPECT_THROW(plan_matvec(4096, 2048), InvalidArgumentError);
  EXPECT_EQ(plan_matvec(256, 8192).rotation_steps().size(), 15u + 15u);
}

}  // namespace
}  // namespace fhelium::runtime
