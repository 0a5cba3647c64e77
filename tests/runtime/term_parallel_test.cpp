// Term-parallel y = M x (circuits::TermParallelTransform) over 2 and 3 cpu
// ranks: every rank's result bit-identical to the whole transform on one
// engine, and correct against the clear product.
#include "fhelium/circuits/term_parallel.hpp"

#include <gtest/gtest.h>

#include <set>

#include "helpers.hpp"

namespace fhelium::circuits {
namespace {

using runtime::Communicator;
using runtime::DeviceGroup;

// One key per step, made once: the ranks' keys are subsets of the whole set.
using HostKeys = std::map<long, HostSwitchKey>;

GaloisKeys upload(const Engine& engine, const HostKeys& keys, const std::vector<long>& steps) {
  std::vector<HostSwitchKey> chosen;
  for (long step : steps) chosen.push_back(keys.at(step));
  return engine.upload_galois_keys(chosen);
}

HostValue one_engine_result(test::Fixture& f, const HostKeys& host_keys, const LinearTransform& whole,
                            const Ciphertext& x) {
  runtime::ProgramBuilder b(f.context, "whole");
  b.output("y", whole.with_horner_giants(false).apply(b, b.input("x", x.state)));
  const runtime::PreparedProgram prepared = b.prepare();
  const auto& steps = prepared.required_keys().rotation_steps;
  const GaloisKeys keys = upload(f.engine, host_keys, {steps.begin(), steps.end()});
  runtime::Materials materials;
  materials.galois_keys = &keys;
  for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
  const runtime::Executable exe = runtime::link(prepared, f.engine, materials);
  return f.engine.download(exe.run(runtime::ValueTree(runtime::ValueTree::Map{{"x", x}})).at("y").ciphertext());
}

class TermParallel : public ::testing::TestWithParam<int> {};

TEST_P(TermParallel, EveryRankHoldsTheOneEngineResultAndTheClearProduct) {
  const auto ranks = static_cast<std::size_t>(GetParam());
  test::Fixture f(test::small_params(11, 2), 41);
  std::mt19937_64 rng(3);
  const auto matrix = test::random_matrix(32, 32, rng);
  const LinearTransform whole = LinearTransform::from_matrix(matrix, f.slots());
  ASSERT_GE(whole.giant_groups(), ranks);
  std::vector<double> x(32);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (auto& v : x) v = d(rng);
  const Ciphertext encrypted = f.encrypt(whole.pack(test::Message(x.begin(), x.end())));
  HostKeys host_keys;
  for (long step : whole.with_horner_giants(false).rotation_steps()) {
    host_keys.emplace(step, f.keygen.galois_key(f.sk, f.context->galois_element(step)));
  }
  const HostValue expected = one_engine_result(f, host_keys, whole, encrypted);

  // Each rank: its own engine (rank 0 the fixture's) and only its part's keys, made by the client.
  std::vector<std::unique_ptr<Engine>> engines;
  engines.push_back(nullptr);
  std::vector<GaloisKeys> keys;
  std::set<long> union_of_steps;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r > 0) engines.push_back(std::make_unique<Engine>(f.context, cpu::make_cpu_backend({1})));
    const Engine& e = r == 0 ? f.engine : *engines[r];
    const std::vector<long> steps = TermParallelTransform::rotation_steps(whole, r, ranks);
    union_of_steps.insert(steps.begin(), steps.end());
    keys.push_back(upload(e, host_keys, steps));
  }
  const auto whole_steps = whole.with_horner_giants(false).rotation_steps();
  EXPECT_EQ(union_of_steps, std::set<long>(whole_steps.begin(), whole_steps.end()));

  std::vector<std::vector<u64>> results(ranks);
  std::vector<std::size_t> key_switches(ranks);
  DeviceGroup(static_cast<int>(ranks)).run([&](Communicator& c) {
    const auto r = static_cast<std::size_t>(c.rank());
    const Engine& e = r == 0 ? f.engine : *engines[r];
    const TermParallelTransform t(whole, e, encrypted.state, keys[r], r, ranks);
    key_switches[r] = t.key_switches();
    const Ciphertext x_here = c.broadcast(e, r == 0 ? &encrypted : nullptr, 0);
    results[r] = e.download(t.apply(c, x_here)).data;
  });
  const LinearTransform flat = whole.with_horner_giants(false);
  std::size_t total = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    EXPECT_TRUE(results[r] == expected.data) << "rank " << r;
    EXPECT_LE(key_switches[r], (flat.key_switches() + ranks - 1) / ranks + 1) << "rank " << r;  // the work is shared
    total += key_switches[r];
  }
  EXPECT_EQ(total, flat.key_switches());

  const test::Message got = f.encoder.decode(f.decryptor.decrypt(expected, f.sk));
  double error = 0;
  for (std::size_t j = 0; j < got.size(); ++j) {
    std::complex<double> e = 0;
    for (std::size_t col = 0; col < x.size(); ++col) e += matrix[j % x.size()][col] * x[col];
    error = std::max(error, std::abs(got[j] - e));
  }
  EXPECT_LT(error, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TermParallel, ::testing::Values(1, 2, 3));

TEST(TermParallelParts, PartsCoverEveryDiagonalOnceAndRefuseTooManyRanks) {
  std::mt19937_64 rng(5);
  const LinearTransform whole = LinearTransform::from_matrix(test::random_matrix(16, 16, rng), 1024);
  std::multiset<long> seen;
  for (std::size_t r = 0; r < 3; ++r) {
    const LinearTransform part = whole.part(r, 3);
    EXPECT_EQ(part.baby_step(), whole.baby_step());
    for (long k : part.diagonal_indices()) seen.insert(k);
  }
  const auto all = whole.diagonal_indices();
  EXPECT_EQ(seen, std::multiset<long>(all.begin(), all.end()));
  EXPECT_THROW(whole.part(0, whole.giant_groups() + 1), InvalidArgumentError);
  EXPECT_THROW(whole.part(3, 3), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::circuits
