// The server side of a pipeline run (RunOptions::server): evaluation keys and
// input ciphertexts from files, outputs written as ciphertexts, no secret key;
// the client decrypts and compares with the clear calculation. And each
// refusal: a missing input file, an input file naming no input, a ciphertext
// in another state, a missing Galois key, keys of another context.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/runtime/key_folder.hpp"
#include "fhelium/runtime/pipeline.hpp"
#include "fhelium/serialization.hpp"

namespace fhelium::runtime {
namespace {

namespace fs = std::filesystem;

std::string pipeline_text(const std::string& q_bits = "[55, 40, 40, 40]") {
  return "params: {ring_degree: 4096, q_bits: " + q_bits +
         ", p_bits: [55], scale_bits: 40, allow_insecure: true}\n"
         "inputs:\n"
         "  x: {random: {distribution: uniform, range: [-1, 1], length: 2048, seed: 3}}\n"
         "steps:\n"
         "  - {name: square, op: multiply_relinearize_rescale, args: [x, x]}\n"
         "  - {name: y, op: rotate, args: [square], step: 3}\n"
         "execution: {mode: program}\n";
}

// A client: keys in a folder (the server's copy has no secret key), x encrypted.
class ServerSideTest : public testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("fhelium-server-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "keys");
    spec = parse_pipeline(pipeline_text(), "server.yaml");
    context = plan_pipeline(spec).context;
    keygen = std::make_unique<KeyGenerator>(context, rng);
    sk = std::make_unique<SecretKey>(keygen->secret_key());
    save_relinearization_key_file(key_file(key_folder::relinearization_key), *context,
                                  keygen->relinearization_key(*sk));
    const HostSwitchKey rotation = keygen->galois_key(*sk, context->galois_element(3));
    save_galois_keys_file(key_file(key_folder::galois_keys), *context, std::span(&rotation, 1));
    x.assign(2048, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3 * static_cast<double>(i));
    Encryptor encryptor(context, rng);
    save_ciphertext_file((dir / "x.ct").string(), *context,
                         encryptor.encrypt(Encoder(context).encode(x, context->max_level(), context->params().scale),
                                           keygen->public_key(*sk)));
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string key_file(const char* name) const { return (dir / "keys" / name).string(); }

  RunOptions server_options() const {
    RunOptions o;
    o.backend_factory = [](const BackendSpec&) { return cpu::make_cpu_backend(); };
    o.write_files = false;
    ServerSide server;
    server.keys_dir = (dir / "keys").string();
    server.input_ciphertexts["x"] = (dir / "x.ct").string();
    server.output_ciphertexts["y"] = (dir / "y.ct").string();
    o.server = server;
    return o;
  }

  fs::path dir;
  PipelineSpec spec;
  std::shared_ptr<const Context> context;
  Csprng rng{Seed{7}};
  std::unique_ptr<KeyGenerator> keygen;
  std::unique_ptr<SecretKey> sk;
  std::vector<double> x;
};

TEST_F(ServerSideTest, ComputesOnCiphertextFilesAndTheClientDecrypts) {
  const PipelineReport report = run_pipeline(spec, server_options());
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].file, (dir / "y.ct").string());
  EXPECT_FALSE(report.outputs[0].decrypted);  // the server has nothing to compare with
  const HostValue y = load_ciphertext_file((dir / "y.ct").string(), *context);
  const auto decoded = Encoder(context).decode(Decryptor(context).decrypt(y, *sk), 2048);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = x[(i + 3) % x.size()] * x[(i + 3) % x.size()];
    worst = std::max(worst, std::abs(decoded[i].real() - want));
  }
  EXPECT_LT(worst, 1e-6);
}

// A bootstrap under a dense secret on the server: the encapsulation keys come
// from the key folder like every evaluation key; without them the server
// names the file it needs.
TEST_F(ServerSideTest, BootstrapsWithTheEncapsulationKeysOfTheFolder) {
  const PipelineSpec bootstrapping = parse_pipeline(
      "params: {ring_degree: 4096, q_bits: [60, 40, 40, 40, 40, 40, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, "
      "60], p_bits: [60, 60, 60, 60], scale_bits: 40, allow_insecure: true}\n"
      "inputs:\n"
      "  x: {random: {distribution: uniform, range: [-1, 1], length: 2048, seed: 3}}\n"
      "steps:\n"
      "  - {name: y, op: bootstrap, args: [x]}\n",
      "bootstrap.yaml");
  const PipelinePlan plan = plan_pipeline(bootstrapping);
  ASSERT_TRUE(plan.keys.sparse_encapsulation);
  const auto ctx = plan.context;
  KeyGenerator keys(ctx, rng);
  const SecretKey secret = keys.secret_key();
  fs::remove_all(dir / "keys");
  fs::create_directories(dir / "keys");
  save_relinearization_key_file(key_file(key_folder::relinearization_key), *ctx, keys.relinearization_key(secret));
  std::vector<HostSwitchKey> galois;
  for (std::uint32_t e : plan.keys.galois_elements(*plan.context)) galois.push_back(keys.galois_key(secret, e));
  save_galois_keys_file(key_file(key_folder::galois_keys), *ctx, galois);
  Encryptor encryptor(ctx, rng);
  save_ciphertext_file(
      (dir / "x.ct").string(), *ctx,
      encryptor.encrypt(Encoder(ctx).encode(x, ctx->max_level(), ctx->params().scale), keys.public_key(secret)));

  try {
    run_pipeline(bootstrapping, server_options());
    FAIL() << "the server ran a bootstrap without the encapsulation keys";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(key_folder::sparse_encapsulation_keys), std::string::npos) << e.what();
  }

  save_sparse_encapsulation_keys_file(key_file(key_folder::sparse_encapsulation_keys), *ctx,
                                      SparseEncapsulationKeys::generate(ctx, secret, rng));
  (void)run_pipeline(bootstrapping, server_options());
  const HostValue y = load_ciphertext_file((dir / "y.ct").string(), *ctx);
  EXPECT_EQ(y.state.level, ctx->max_level() - 16);
  const auto decoded = Encoder(ctx).decode(Decryptor(ctx).decrypt(y, secret), 2048);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(decoded[i].real() - x[i]));
  EXPECT_LT(worst, 1e-5);
}

TEST_F(ServerSideTest, RefusesAnEncryptedInputWithoutAFile) {
  RunOptions o = server_options();
  o.server->input_ciphertexts.clear();
  try {
    (void)run_pipeline(spec, o);
    FAIL() << "a run without x's ciphertext file was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--input x=FILE"), std::string::npos) << e.what();
  }
}

TEST_F(ServerSideTest, RefusesAnInputFileNamingNoInput) {
  RunOptions o = server_options();
  o.server->input_ciphertexts["z"] = (dir / "x.ct").string();
  EXPECT_THROW((void)run_pipeline(spec, o), InvalidArgumentError);
}

TEST_F(ServerSideTest, RefusesACiphertextAtAnotherLevel) {
  Encryptor encryptor(context, rng);
  save_ciphertext_file(
      (dir / "x.ct").string(), *context,
      encryptor.encrypt(Encoder(context).encode(x, 1, context->params().scale), keygen->public_key(*sk)));
  try {
    (void)run_pipeline(spec, server_options());
    FAIL() << "a ciphertext at level 1 was accepted for an input the pipeline encrypts at level 3";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("expected level 3"), std::string::npos) << e.what();
  }
}

TEST_F(ServerSideTest, RefusesAGaloisKeyFileWithoutTheRotation) {
  const HostSwitchKey other = keygen->galois_key(*sk, context->galois_element(5));
  save_galois_keys_file(key_file(key_folder::galois_keys), *context, std::span(&other, 1));
  EXPECT_THROW((void)run_pipeline(spec, server_options()), MissingKeyError);
}

TEST_F(ServerSideTest, RefusesKeysOfAnotherContext) {
  const PipelineSpec other = parse_pipeline(pipeline_text("[55, 40, 40, 40, 40]"), "other.yaml");
  try {
    (void)run_pipeline(other, server_options());
    FAIL() << "keys of another context were accepted";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("fingerprint"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fhelium::runtime
