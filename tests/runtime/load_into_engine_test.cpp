// Loading straight into an engine's backend (load_ciphertext(in, engine),
// load_relinearization_key(in, engine)): the same residues as the host loader
// followed by an upload, and the same refusals, on the embedded cpu backend,
// on the cpu plugin (through the plugin ABI's upload_filled), and on the
// backend named by FHELIUM_RUNTIME_TEST_BACKEND when there is one.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "expectations.hpp"
#include "fhelium/serialization.hpp"
#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::test {
namespace {

constexpr std::size_t header_bytes = 96;

template <class Save>
std::string saved(Save&& save) {
  std::ostringstream out;
  save(out);
  return std::move(out).str();
}

// The engines a load is tried on: the fixture's (embedded cpu), the cpu
// plugin, and the test backend.
std::vector<std::pair<std::string, Engine>> engines(const Fixture& f) {
  std::vector<std::pair<std::string, Engine>> out;
  out.emplace_back("embedded cpu", f.engine);
  out.emplace_back("cpu plugin", Engine(f.context, load_backend("cpu")));
  const TestBackend other = runtime_test_backend();
  if (other.backend) out.emplace_back("test backend " + other.backend->name(), Engine(f.context, other.backend));
  return out;
}

std::vector<u64> downloaded_key(const Engine& engine, const RelinKey& key, std::size_t words) {
  std::vector<u64> out(words);
  engine.backend().download(*key.buffer, out.data(), words * sizeof(u64));
  return out;
}

// N = 2^14 with 8 limbs and one special prime: the key is 18.9 MB, three of
// the backends' 8 MiB chunks, so the loads cross chunk boundaries.
struct LoadIntoEngine : ::testing::Test {
  Fixture f{small_params(14, 7, 1), 5};
  HostValue ciphertext() { return f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 7, f.scale()), f.pk); }
};

TEST_F(LoadIntoEngine, CiphertextsMatchTheHostLoaderInEveryForm) {
  const HostValue ct = ciphertext();
  const SeededCiphertext seeded =
      f.encryptor.encrypt_symmetric_seeded(f.encoder.encode(f.random_message(1.0), 7, f.scale()), f.sk);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"whole", saved([&](std::ostream& out) { save_ciphertext(out, *f.context, ct); })},
      {"compressed", saved([&](std::ostream& out) {
         save_ciphertext(out, *f.context, ct, SaveOptions{true, 3});
       })},
      {"seeded", saved([&](std::ostream& out) { save_ciphertext(out, *f.context, seeded); })}};
  for (const auto& [name, engine] : engines(f)) {
    for (const auto& [form, bytes] : files) {
      std::istringstream host_in(bytes), engine_in(bytes);
      const HostValue expected = load_ciphertext(host_in, *f.context);
      const Ciphertext loaded = load_ciphertext(engine_in, engine);
      EXPECT_EQ(loaded.state, expected.state) << name << ", " << form;
      EXPECT_TRUE(engine.download(loaded).data == expected.data) << name << ", " << form << ": residues differ";
    }
  }
}

TEST_F(LoadIntoEngine, RelinearizationKeysMatchTheHostLoaderAndRelinearize) {
  HostSwitchKey whole = f.keygen.relinearization_key(f.sk);
  const HostSwitchKey with_seed = whole;
  whole.a_seed.reset();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"whole", saved([&](std::ostream& out) { save_relinearization_key(out, *f.context, whole); })},
      {"compressed", saved([&](std::ostream& out) {
         save_relinearization_key(out, *f.context, whole, SaveOptions{true, 1});
       })},
      {"seeded", saved([&](std::ostream& out) { save_relinearization_key(out, *f.context, with_seed); })}};
  const Message m = f.random_message(1.0);
  for (const auto& [name, engine] : engines(f)) {
    for (const auto& [form, bytes] : files) {
      std::istringstream in(bytes);
      const RelinKey key = load_relinearization_key(in, engine);
      EXPECT_TRUE(downloaded_key(engine, key, whole.data.size()) == whole.data) << name << ", " << form;
      // And it is a working key: x * x decrypts to m * m.
      const Ciphertext x = engine.upload_ciphertext(f.encryptor.encrypt(f.encoder.encode(m, 7, f.scale()), f.pk));
      const Ciphertext square = engine.rescale(engine.multiply_relinearize(x, x, key));
      Message expected(m.size());
      for (std::size_t i = 0; i < m.size(); ++i) expected[i] = m[i] * m[i];
      const auto decrypted = f.encoder.decode(f.decryptor.decrypt(engine.download(square), f.sk), f.slots());
      EXPECT_LT(max_error(expected, decrypted), 1e-6) << name << ", " << form;
    }
  }
}

TEST_F(LoadIntoEngine, RefusesWhatTheHostLoaderRefuses) {
  const Context& ctx = *f.context;
  HostSwitchKey key = f.keygen.relinearization_key(f.sk);
  key.a_seed.reset();
  // A residue equal to its prime in the last chunk: digit 7's a, key limb 3.
  const std::size_t n = ctx.ring_degree();
  const std::size_t limbs = static_cast<std::size_t>(ctx.key_limbs());
  HostSwitchKey bad_key = key;
  bad_key.data[((2 * 7 + 1) * limbs + 3) * n + 17] = ctx.key_modulus(3).value;
  const std::string bad_key_file = saved([&](std::ostream& out) { save_relinearization_key(out, ctx, bad_key); });
  // In a ciphertext: component 1, limb 2.
  HostValue bad_ct = ciphertext();
  bad_ct.data[(1 * 8 + 2) * n + 5] = ctx.q()[2].value;
  const std::string bad_ct_file = saved([&](std::ostream& out) { save_ciphertext(out, ctx, bad_ct); });
  const std::string key_file = saved([&](std::ostream& out) { save_relinearization_key(out, ctx, key); });
  std::string flipped = key_file;
  flipped[header_bytes + 12 * 1024 * 1024] ^= 0x10;  // in the second chunk
  const std::string truncated = key_file.substr(0, key_file.size() - 1000);
  Fixture other(small_params(14, 6, 1), 6);
  const std::string other_context = saved([&](std::ostream& out) {
    save_ciphertext(
        out, *other.context,
        other.encryptor.encrypt(other.encoder.encode(other.random_message(1.0), 6, other.scale()), other.pk));
  });

  for (const auto& [name, engine] : engines(f)) {
    SCOPED_TRACE(name);
    const auto key_error = [&](const std::string& bytes) {
      return error_of<FormatError>([&] {
        std::istringstream in(bytes);
        load_relinearization_key(in, engine);
      });
    };
    expect_contains(key_error(bad_key_file),
                    {"residue", "digit 7 a, key limb 3, coefficient 17", "not below its prime"});
    expect_contains(key_error(flipped), {"integrity check failed", "the data is corrupted"});
    expect_contains(key_error(truncated), {"truncated"});
    expect_contains(error_of<FormatError>([&] {
                      std::istringstream in(bad_ct_file);
                      load_ciphertext(in, engine);
                    }),
                    {"component 1, limb 2, coefficient 5", "not below its prime"});
    expect_contains(error_of<StateError>([&] {
                      std::istringstream in(other_context);
                      load_ciphertext(in, engine);
                    }),
                    {"fingerprint"});
  }
}

}  // namespace
}  // namespace fhelium::test
