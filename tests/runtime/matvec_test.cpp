// A square matvec (circuits::LinearTransform): clear-message check at several
// sizes, and its GraphProgram replays bit-identical to the uncaptured
// Executable.
#include <gtest/gtest.h>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/runtime/graph_program.hpp"
#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::runtime {
namespace {

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
  std::vector<std::vector<double>> matrix;
  circuits::LinearTransform transform;
  GaloisKeys keys;
  std::optional<Executable> executable;

  explicit MatvecSetup(int size)
      : matrix(test::random_matrix(static_cast<std::size_t>(size), static_cast<std::size_t>(size), rng)),
        transform(circuits::LinearTransform::from_matrix(matrix, f.slots())) {
    ProgramBuilder b(f.context, "matvec");
    b.output("y", transform.apply(b, b.input("x", f.encrypt(test::Message(f.slots())).state)));
    const PreparedProgram prepared = b.prepare();
    const KeyRequirements required = prepared.required_keys();
    std::vector<long> steps(required.rotation_steps.begin(), required.rotation_steps.end());
    keys = f.galois_keys(steps);
    Materials materials;
    materials.galois_keys = &keys;
    for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
    executable = link(prepared, f.engine, materials);
  }

  Ciphertext encrypt(const std::vector<double>& x) { return f.encrypt(transform.pack(test::Message(x.begin(), x.end()))); }
};

class Matvec : public ::testing::TestWithParam<int> {};

TEST_P(Matvec, MatchesTheClearProductInEverySlot) {
  MatvecSetup s(GetParam());
  const std::vector<double> x = random_vector(GetParam(), s.rng);
  const ValueTree out = s.executable->run(ValueTree(ValueTree::Map{{"x", s.encrypt(x)}}));
  const test::Message y = s.f.decrypt(out.at("y").ciphertext());
  double error = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    std::complex<double> expected = 0;
    for (std::size_t c = 0; c < x.size(); ++c) expected += s.matrix[j % x.size()][c] * x[c];
    error = std::max(error, std::abs(y[j] - expected));
  }
  EXPECT_LT(error, 1e-5 * GetParam());
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

}  // namespace
}  // namespace fhelium::runtime
