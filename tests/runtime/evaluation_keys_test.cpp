// EvaluationKeys: exactly the keys a prepared program needs, made from the
// secret key or read from a key folder, and a program linked with them runs.
#include "fhelium/runtime/evaluation_keys.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <complex>
#include <filesystem>
#include <string>
#include <vector>

#include "expectations.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "fhelium/runtime/key_folder.hpp"
#include "fhelium/serialization.hpp"
#include "helpers.hpp"

namespace fhelium::runtime {
namespace {

using test::Fixture;
using test::small_params;
using test::error_of;
using test::expect_contains;

// x -> (x * x) rotated by 1, by -2 and conjugated, summed: a relinearization
// key and three Galois keys.
PreparedProgram program_needing_keys(Fixture& f, const ValueState& x_state) {
  ProgramBuilder b(f.context, "keys");
  const auto x = b.input("x", x_state);
  const auto sq = b.multiply_relinearize_rescale(x, x);
  b.output("y", b.add(b.add(b.rotate(sq, 1), b.rotate(sq, -2)), b.conjugate(sq)));
  return b.prepare();
}

struct EvaluationKeysTest : ::testing::Test {
  Fixture f{small_params(11, 3)};
  ValueState x_state = f.encrypt(f.random_message(0.5)).state;
};

TEST_F(EvaluationKeysTest, GenerateMakesExactlyTheNeededKeysAndTheProgramRuns) {
  const PreparedProgram prepared = program_needing_keys(f, x_state);
  const KeyRequirements needed = prepared.required_keys();
  std::vector<std::string> made;
  std::size_t last_total = 0;
  const EvaluationKeys keys = EvaluationKeys::generate(
      needed, f.engine, f.keygen, f.sk, f.rng, [&](std::size_t done, std::size_t total, const std::string& key) {
        made.push_back(key);
        EXPECT_EQ(done, made.size());
        last_total = total;
      });
  EXPECT_EQ(made.size(), 4u);  // relinearization and three Galois elements
  EXPECT_EQ(last_total, 4u);
  const Materials materials = keys.materials();
  ASSERT_NE(materials.relinearization_key, nullptr);
  ASSERT_NE(materials.galois_keys, nullptr);
  EXPECT_EQ(materials.galois_keys->keys.size(), needed.galois_elements(*f.context).size());
  for (std::uint32_t e : needed.galois_elements(*f.context)) EXPECT_TRUE(materials.galois_keys->contains(e));
  EXPECT_EQ(materials.sparse_encapsulation, nullptr);
  EXPECT_GT(keys.bytes(), 0u);

  const Executable exe = link(prepared, f.engine, materials);
  const test::Message m = f.random_message(0.5);
  const ValueTree out = exe.run(ValueTree(ValueTree::Map{{"x", f.encrypt(m)}}));
  const auto expected = evaluate_clear(prepared.program(), {{"x", m}}, {}, f.slots()).at("y");
  const test::Message got = f.decrypt(out.at("y").ciphertext());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_LT(std::abs(got[i] - expected[i]), 1e-4) << "slot " << i;
}

TEST_F(EvaluationKeysTest, AProgramWithoutKeysGetsNone) {
  ProgramBuilder b(f.context, "none");
  b.output("y", b.add(b.input("x", x_state), b.input("z", x_state)));
  const EvaluationKeys keys = EvaluationKeys::generate(b.prepare().required_keys(), f.engine, f.keygen, f.sk, f.rng);
  EXPECT_EQ(keys.materials().relinearization_key, nullptr);
  EXPECT_TRUE(keys.materials().galois_keys->keys.empty());
  EXPECT_EQ(keys.bytes(), 0u);
}

TEST_F(EvaluationKeysTest, LoadReadsOnlyTheNeededKeysFromAFolderAndNamesWhatIsMissing) {
  const PreparedProgram prepared = program_needing_keys(f, x_state);
  const KeyRequirements needed = prepared.required_keys();
  const auto dir = std::filesystem::temp_directory_path() / ("fhelium-evaluation-keys-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto elements = needed.galois_elements(*f.context);
  std::vector<HostSwitchKey> galois;
  for (std::uint32_t e : elements) galois.push_back(f.keygen.galois_key(f.sk, e));
  galois.push_back(f.keygen.galois_key(f.sk, f.context->galois_element(5)));  // one the program does not need
  save_galois_keys_file((dir / key_folder::galois_keys).string(), *f.context, galois);

  // No relinearization key file yet: the error names it.
  expect_contains(error_of<Error>([&] { EvaluationKeys::load(needed, f.engine, dir.string()); }),
                  {key_folder::relinearization_key});
  save_relinearization_key_file((dir / key_folder::relinearization_key).string(), *f.context,
                                f.keygen.relinearization_key(f.sk));
  const EvaluationKeys keys = EvaluationKeys::load(needed, f.engine, dir.string());
  EXPECT_EQ(keys.materials().galois_keys->keys.size(), elements.size()) << "the unneeded key is not read";
  EXPECT_NO_THROW(link(prepared, f.engine, keys.materials()));

  // A folder without one of the needed Galois keys: the error names its element.
  galois.erase(galois.begin());
  save_galois_keys_file((dir / key_folder::galois_keys).string(), *f.context, galois);
  expect_contains(error_of<MissingKeyError>([&] { EvaluationKeys::load(needed, f.engine, dir.string()); }),
                  {std::to_string(*elements.begin())});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fhelium::runtime
