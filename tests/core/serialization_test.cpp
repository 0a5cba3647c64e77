// The serialization format: bit-identical round trips of every object kind
// (compressed or not, seeded or not), loaded keys that work in the Engine, and
// one test per refusal. Forged files re-seal their checks as
// docs/serialization.md specifies, so the check under test is the one that fires.
#include "fhelium/serialization.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <streambuf>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "expectations.hpp"
#include "fuzz/fuzz_context.hpp"
#include "helpers.hpp"

namespace fhelium::test {
namespace {

constexpr std::size_t header_size = 96;

// Small insecure parameters with several key digits (two special primes).
CkksParameters params() { return small_params(11, 3, 2); }

template <class Save>
std::string saved(Save&& save) {
  std::ostringstream out;
  save(out);
  return std::move(out).str();
}

std::istringstream input(const std::string& bytes) { return std::istringstream(bytes); }

template <class T>
void put(std::string& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

template <class T>
T get(const std::string& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

// Recomputes the header check (bytes 0..87) and the object's check (the last
// 8 bytes, over everything before them).
void reseal(std::string& bytes) {
  put(bytes, 88, XXH3_64bits(bytes.data(), 88));
  put(bytes, bytes.size() - 8, XXH3_64bits(bytes.data(), bytes.size() - 8));
}

// A streambuf that cannot seek, like a pipe.
class PipeBuf : public std::streambuf {
 public:
  explicit PipeBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

struct SerializationTest : ::testing::Test {
  Fixture f{params()};
  const Context& ctx = *f.context;

  HostValue fresh_ciphertext() {
    return f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), ctx.max_level(), f.scale()), f.pk);
  }
};

TEST_F(SerializationTest, ParametersRebuildTheSameContext) {
  const std::string bytes = saved([&](std::ostream& out) { save_parameters(out, ctx); });
  auto in = input(bytes);
  const auto loaded = load_context(in);
  EXPECT_EQ(context_fingerprint(*loaded), context_fingerprint(ctx));
  EXPECT_NE(loaded->id(), ctx.id());
  ASSERT_EQ(loaded->q().size(), ctx.q().size());
  for (std::size_t i = 0; i < ctx.q().size(); ++i) EXPECT_EQ(loaded->q()[i].value, ctx.q()[i].value);
  for (std::size_t i = 0; i < ctx.p().size(); ++i) EXPECT_EQ(loaded->p()[i].value, ctx.p()[i].value);
  EXPECT_EQ(loaded->params().scale, ctx.params().scale);
  EXPECT_TRUE(loaded->params().allow_insecure);
  EXPECT_EQ(get<std::uint16_t>(bytes, 10), 1) << "object kind parameters";
}

TEST_F(SerializationTest, InsecureParametersAreRefusedUnlessSavedSo) {
  std::string bytes = saved([&](std::ostream& out) { save_parameters(out, ctx); });
  bytes[header_size + 6] = 0;  // allow_insecure
  reseal(bytes);
  auto in = input(bytes);
  EXPECT_THROW(load_context(in), SecurityError);
}

TEST_F(SerializationTest, FingerprintCoversEveryParameter) {
  const Fingerprint base = context_fingerprint(ctx);
  EXPECT_EQ(base, context_fingerprint(*Context::create(params())));
  auto changed = [](auto edit) {
    CkksParameters p = params();
    edit(p);
    return context_fingerprint(*Context::create(p));
  };
  EXPECT_NE(base, changed([](CkksParameters& p) { p.scale *= 2; }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.hamming_weight = 64; }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.security_bits = 192; }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.secret = SecretDistribution::gaussian; }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.q_bits.push_back(40); }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.p_bits.pop_back(); }));
  EXPECT_NE(base, changed([](CkksParameters& p) { p.log_ring_degree = 12; }));
  EXPECT_EQ(to_hex(base).size(), 64u);
}

TEST_F(SerializationTest, ValuesRoundTripBitIdentical) {
  const HostValue pt = f.encoder.encode(f.random_message(1.0), 2, f.scale());
  const HostValue ct = fresh_ciphertext();
  const HostValue product =
      f.engine.download(f.engine.multiply(f.engine.upload_ciphertext(ct), f.engine.upload_ciphertext(ct)));
  ASSERT_EQ(product.state.components, 3);
  const HostValue coefficient = f.engine.download(f.engine.to_coefficient(f.engine.upload_ciphertext(ct)));
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress ? "compressed" : "raw");
    const SaveOptions options{compress, 3};
    {
      auto in = input(saved([&](std::ostream& out) { save_plaintext(out, ctx, pt, options); }));
      const HostValue loaded = load_plaintext(in, ctx);
      EXPECT_EQ(loaded.state, pt.state);
      EXPECT_EQ(loaded.data, pt.data);
    }
    for (const HostValue* v : {&ct, &product, &coefficient}) {
      auto in = input(saved([&](std::ostream& out) { save_ciphertext(out, ctx, *v, options); }));
      const HostValue loaded = load_ciphertext(in, ctx);
      EXPECT_EQ(loaded.state, v->state);
      EXPECT_EQ(loaded.data, v->data);
    }
  }
}

TEST_F(SerializationTest, QpBasisCiphertextRoundTrips) {
  HostValue v;
  v.state = {ctx.id(), ctx.word_size(), 1, f.scale(), Domain::ntt, Basis::QP, 2};
  v.data.resize(v.state.words(ctx));
  Csprng rng(test_seed(9));
  for (int c = 0; c < 2; ++c) {
    for (int limb = 0; limb < v.state.limbs(ctx); ++limb) {
      const u64 q = ctx.key_modulus(v.state.key_limb(ctx, limb)).value;
      rng.fill_uniform(std::span(v.limb(ctx, c, limb), ctx.ring_degree()), q);
    }
  }
  auto in = input(saved([&](std::ostream& out) { save_ciphertext(out, ctx, v); }));
  const HostValue loaded = load_ciphertext(in, ctx);
  EXPECT_EQ(loaded.state, v.state);
  EXPECT_EQ(loaded.data, v.data);
}

TEST_F(SerializationTest, SeededSymmetricCiphertextIsHalfAndDecrypts) {
  const Message m = f.random_message(1.0);
  const SeededCiphertext seeded =
      f.encryptor.encrypt_symmetric_seeded(f.encoder.encode(m, ctx.max_level(), f.scale()), f.sk);
  for (bool compress : {false, true}) {
    const std::string bytes = saved([&](std::ostream& out) {
      save_ciphertext(out, ctx, seeded, SaveOptions{compress, 3});
    });
    const std::string full = saved([&](std::ostream& out) { save_ciphertext(out, ctx, seeded.value); });
    if (!compress) {
      EXPECT_LE(static_cast<double>(bytes.size()), 0.52 * static_cast<double>(full.size()));
    }
    auto in = input(bytes);
    const HostValue loaded = load_ciphertext(in, ctx);
    EXPECT_EQ(loaded.state, seeded.value.state);
    EXPECT_EQ(loaded.data, seeded.value.data);
    EXPECT_LT(max_error(m, f.encoder.decode(f.decryptor.decrypt(loaded, f.sk), f.slots())), 1e-6);
  }
}

TEST_F(SerializationTest, LoadedPublicKeyCiphertextDecrypts) {
  const Message m = f.random_message(1.0);
  const HostValue ct = f.encryptor.encrypt(f.encoder.encode(m, 1, f.scale()), f.pk);
  auto in = input(saved([&](std::ostream& out) { save_ciphertext(out, ctx, ct); }));
  EXPECT_LT(max_error(m, f.encoder.decode(f.decryptor.decrypt(load_ciphertext(in, ctx), f.sk), f.slots())), 1e-6);
}

TEST_F(SerializationTest, PublicKeyRoundTripsSeededAndFull) {
  ASSERT_TRUE(f.pk.a_seed.has_value()) << "key generation records the seed of a";
  PublicKey unseeded{f.pk.value, std::nullopt};
  std::size_t sizes[2] = {};
  for (const PublicKey* key : {&f.pk, &unseeded}) {
    for (bool compress : {false, true}) {
      const std::string bytes = saved([&](std::ostream& out) {
        save_public_key(out, ctx, *key, SaveOptions{compress, 3});
      });
      if (!compress) sizes[key == &f.pk ? 0 : 1] = bytes.size();
      auto in = input(bytes);
      const PublicKey loaded = load_public_key(in, ctx);
      EXPECT_EQ(loaded.value.state, f.pk.value.state);
      EXPECT_EQ(loaded.value.data, f.pk.value.data);
      EXPECT_EQ(loaded.a_seed, key->a_seed);
      // Encrypting with the loaded key is encrypting with the original.
      const HostValue pt = f.encoder.encode(f.random_message(1.0), ctx.max_level(), f.scale());
      Csprng r1(test_seed(5)), r2(test_seed(5));
      EXPECT_EQ(Encryptor(f.context, r1).encrypt(pt, loaded).data, Encryptor(f.context, r2).encrypt(pt, f.pk).data);
    }
  }
  EXPECT_LE(static_cast<double>(sizes[0]), 0.52 * static_cast<double>(sizes[1]));
}

TEST_F(SerializationTest, SeededReSaveGivesTheSameBytes) {
  const HostSwitchKey rk = f.keygen.relinearization_key(f.sk);
  const std::string first = saved([&](std::ostream& out) { save_relinearization_key(out, ctx, rk); });
  auto in = input(first);
  const HostSwitchKey loaded = load_relinearization_key(in, ctx);
  EXPECT_EQ(first, saved([&](std::ostream& out) { save_relinearization_key(out, ctx, loaded); }));
}

TEST_F(SerializationTest, RelinearizationKeyRoundTripsAndWorksInTheEngine) {
  const HostSwitchKey rk = f.keygen.relinearization_key(f.sk);
  ASSERT_TRUE(rk.a_seed.has_value());
  HostSwitchKey full = rk;
  full.a_seed.reset();
  const HostSwitchKey& unseeded = full;
  const auto x = f.engine.upload_ciphertext(fresh_ciphertext());
  const auto product = f.engine.multiply(x, x);
  const auto expected = f.engine.download(f.engine.relinearize(product, f.engine.upload_relinearization_key(rk)));
  std::size_t sizes[2] = {};
  for (const HostSwitchKey* key : {&rk, &unseeded}) {
    for (bool compress : {false, true}) {
      SCOPED_TRACE(std::string(key->a_seed ? "seeded" : "full") + (compress ? ", compressed" : ""));
      const std::string bytes = saved([&](std::ostream& out) {
        save_relinearization_key(out, ctx, *key, SaveOptions{compress, 3});
      });
      if (!compress) sizes[key == &rk ? 0 : 1] = bytes.size();
      auto in = input(bytes);
      const HostSwitchKey loaded = load_relinearization_key(in, ctx);
      EXPECT_EQ(loaded.data, rk.data);
      EXPECT_EQ(loaded.digits, rk.digits);
      EXPECT_EQ(loaded.galois_element, 0u);
      EXPECT_EQ(loaded.a_seed, key->a_seed);
      const auto got = f.engine.download(f.engine.relinearize(product, f.engine.upload_relinearization_key(loaded)));
      EXPECT_EQ(got.data, expected.data);
    }
  }
  EXPECT_LE(static_cast<double>(sizes[0]), 0.52 * static_cast<double>(sizes[1]));
}

TEST_F(SerializationTest, GaloisKeysLoadOneAtATimeAndWorkInTheEngine) {
  std::vector<HostSwitchKey> keys;
  for (long step : {1, -3}) keys.push_back(f.keygen.galois_key(f.sk, ctx.galois_element(step)));
  keys.push_back(f.keygen.galois_key(f.sk, ctx.conjugation_element()));
  keys[1].a_seed.reset();  // a set may mix seeded and full keys
  const auto x = f.engine.upload_ciphertext(fresh_ciphertext());
  const auto original = f.engine.upload_galois_keys(keys);
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress ? "compressed" : "raw");
    const std::string bytes = saved([&](std::ostream& out) {
      save_galois_keys(out, ctx, keys, SaveOptions{compress, 3});
    });
    auto in = input(bytes);
    GaloisKeyFile file(in, ctx);
    std::vector<std::uint32_t> elements;
    for (const auto& k : keys) elements.push_back(k.galois_element);
    std::sort(elements.begin(), elements.end());
    EXPECT_EQ(file.elements(), elements);
    // Out of order, one at a time.
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
      const HostSwitchKey loaded = file.load(it->galois_element);
      EXPECT_EQ(loaded.galois_element, it->galois_element);
      EXPECT_EQ(loaded.data, it->data);
      EXPECT_EQ(loaded.a_seed, it->a_seed);
    }
    const auto all = file.load_all();
    ASSERT_EQ(all.size(), keys.size());
    const auto uploaded = f.engine.upload_galois_keys(all);
    for (long step : {1, -3}) {
      EXPECT_EQ(f.engine.download(f.engine.rotate(x, step, uploaded)).data,
                f.engine.download(f.engine.rotate(x, step, original)).data);
    }
    EXPECT_EQ(f.engine.download(f.engine.conjugate(x, uploaded)).data,
              f.engine.download(f.engine.conjugate(x, original)).data);
  }
}

TEST_F(SerializationTest, SparseEncapsulationKeysRoundTripSeededAndWhole) {
  const SparseEncapsulationKeys keys = SparseEncapsulationKeys::generate(f.context, f.sk, f.rng, 12);
  ASSERT_TRUE(keys.dense_to_sparse.a_seed && keys.sparse_to_dense.a_seed);
  SparseEncapsulationKeys whole_keys = keys;
  whole_keys.dense_to_sparse.a_seed.reset();  // one key without its seed: both are stored whole
  const SparseEncapsulationKeys& whole = whole_keys;
  std::size_t sizes[2] = {};
  for (const SparseEncapsulationKeys* k : {&keys, &whole}) {
    for (bool compress : {false, true}) {
      SCOPED_TRACE(std::string(k == &keys ? "seeded" : "whole") + (compress ? ", compressed" : ""));
      const std::string bytes = saved([&](std::ostream& out) {
        save_sparse_encapsulation_keys(out, ctx, *k, SaveOptions{compress, 3});
      });
      if (!compress) sizes[k == &keys ? 0 : 1] = bytes.size();
      auto in = input(bytes);
      const SparseEncapsulationKeys loaded = load_sparse_encapsulation_keys(in, ctx);
      EXPECT_EQ(loaded.hamming_weight, 12);
      EXPECT_EQ(context_fingerprint(*loaded.low_context), context_fingerprint(*keys.low_context));
      EXPECT_EQ(loaded.dense_to_sparse.data, keys.dense_to_sparse.data);
      EXPECT_EQ(loaded.sparse_to_dense.data, keys.sparse_to_dense.data);
      EXPECT_EQ(loaded.dense_to_sparse.context_id, loaded.low_context->id());
      EXPECT_EQ(loaded.sparse_to_dense.context_id, ctx.id());
      EXPECT_EQ(loaded.sparse_to_dense.a_seed.has_value(), k == &keys);
    }
  }
  EXPECT_LE(static_cast<double>(sizes[0]), 0.52 * static_cast<double>(sizes[1]));
}

TEST_F(SerializationTest, SparseEncapsulationKeysRefuseBadInput) {
  SparseEncapsulationKeys keys = SparseEncapsulationKeys::generate(f.context, f.sk, f.rng, 12);
  const std::string bytes = saved([&](std::ostream& out) { save_sparse_encapsulation_keys(out, ctx, keys); });
  {  // The Hamming weight (header entries) zero or beyond N.
    for (std::uint32_t h : {0u, static_cast<std::uint32_t>(ctx.ring_degree() + 1)}) {
      std::string bad = bytes;
      put(bad, 68, h);
      reseal(bad);
      auto in = input(bad);
      EXPECT_CONTAINS(error_of<FormatError>([&] { load_sparse_encapsulation_keys(in, ctx); }),
                      "Hamming weight of " + std::to_string(h));
    }
  }
  {  // Another context.
    Fixture other(small_params(11, 4, 2));
    auto in = input(bytes);
    EXPECT_CONTAINS(error_of<StateError>([&] { load_sparse_encapsulation_keys(in, *other.context); }),
                    to_hex(context_fingerprint(ctx), 8));
  }
  {  // A residue at its prime in the second key is named as the key back.
    keys.sparse_to_dense.a_seed.reset();
    keys.dense_to_sparse.a_seed.reset();
    keys.sparse_to_dense.data[3] = ctx.key_modulus(0).value;
    auto in = input(saved([&](std::ostream& out) { save_sparse_encapsulation_keys(out, ctx, keys); }));
    EXPECT_CONTAINS(error_of<FormatError>([&] { load_sparse_encapsulation_keys(in, ctx); }),
                    "the key back, digit 0 b, key limb 0");
  }
  {  // A relinearization key where the encapsulation keys are expected.
    auto in = input(
        saved([&](std::ostream& out) { save_relinearization_key(out, ctx, f.keygen.relinearization_key(f.sk)); }));
    EXPECT_CONTAINS(error_of<FormatError>([&] { load_sparse_encapsulation_keys(in, ctx); }),
                    "expected sparse-secret encapsulation keys, but the input holds a relinearization key");
  }
}

TEST_F(SerializationTest, SecretKeyRoundTrips) {
  const std::string bytes = saved([&](std::ostream& out) { save_secret_key_unprotected(out, ctx, f.sk); });
  EXPECT_EQ(bytes.size(), header_size + ctx.ring_degree() + 8);
  auto in = input(bytes);
  const SecretKey loaded = load_secret_key(in, ctx);
  EXPECT_EQ(loaded.coefficients(), f.sk.coefficients());
  EXPECT_EQ(loaded.ntt_qp(), f.sk.ntt_qp());
  EXPECT_EQ(loaded.ntt_qp_shoup(), f.sk.ntt_qp_shoup());
}

TEST_F(SerializationTest, UnseekableStreamsLoad) {
  const HostValue ct = fresh_ciphertext();
  PipeBuf pipe(saved([&](std::ostream& out) { save_ciphertext(out, ctx, ct, SaveOptions{true, 3}); }));
  std::istream in(&pipe);
  EXPECT_EQ(load_ciphertext(in, ctx).data, ct.data);

  // A seeded key expands after the read here (its seed cannot be read ahead).
  const HostSwitchKey rk = f.keygen.relinearization_key(f.sk);
  ASSERT_TRUE(rk.a_seed.has_value());
  PipeBuf relin(saved([&](std::ostream& out) { save_relinearization_key(out, ctx, rk); }));
  std::istream rin(&relin);
  EXPECT_EQ(load_relinearization_key(rin, ctx).data, rk.data);

  std::vector<HostSwitchKey> keys = {f.keygen.galois_key(f.sk, ctx.galois_element(1)),
                                     f.keygen.galois_key(f.sk, ctx.galois_element(2))};
  PipeBuf galois(saved([&](std::ostream& out) { save_galois_keys(out, ctx, keys); }));
  std::istream gin(&galois);
  GaloisKeyFile file(gin, ctx);
  const auto second = std::max(keys[0].galois_element, keys[1].galois_element);
  const auto first = std::min(keys[0].galois_element, keys[1].galois_element);
  EXPECT_EQ(file.load(second).galois_element, second);  // skips the first entry
  EXPECT_CONTAINS(error_of<InvalidArgumentError>([&] { file.load(first); }), "not seekable");
}

TEST_F(SerializationTest, ObjectsFollowEachOtherInOneStream) {
  const HostValue ct = fresh_ciphertext();
  std::stringstream s;
  save_parameters(s, ctx);
  save_public_key(s, ctx, f.pk);
  const HostSwitchKey rk = f.keygen.relinearization_key(f.sk);
  save_relinearization_key(s, ctx, rk);  // seeded: its seed is read ahead, then the stream comes back
  save_ciphertext(s, ctx, ct);
  EXPECT_EQ(peek_kind(s), ObjectKind::parameters);
  const auto loaded_ctx = load_context(s);
  EXPECT_EQ(peek_kind(s), ObjectKind::public_key);
  EXPECT_EQ(load_public_key(s, ctx).value.data, f.pk.value.data);
  EXPECT_EQ(load_relinearization_key(s, ctx).data, rk.data);
  EXPECT_EQ(load_ciphertext(s, ctx).data, ct.data);
}

TEST_F(SerializationTest, PresetSizesAndRoundTrip) {
  Fixture big(preset("slots8192_scale40_levels7"));
  const HostSwitchKey rk = big.keygen.relinearization_key(big.sk);
  HostSwitchKey unseeded = rk;
  unseeded.a_seed.reset();
  const std::string seeded_bytes = saved([&](std::ostream& out) { save_relinearization_key(out, *big.context, rk); });
  const std::string full_bytes =
      saved([&](std::ostream& out) { save_relinearization_key(out, *big.context, unseeded); });
  EXPECT_LE(static_cast<double>(seeded_bytes.size()), 0.52 * static_cast<double>(full_bytes.size()));
  auto in = input(seeded_bytes);
  EXPECT_EQ(load_relinearization_key(in, *big.context).data, rk.data);
}

TEST(SerializationCorpus, CommittedFuzzSeedsLoad) {
  const Context& ctx = fuzz::fuzz_context();
  const std::filesystem::path root = FHELIUM_FUZZ_CORPUS_DIR;
  const std::vector<std::pair<std::string, std::function<void(std::istream&)>>> loaders = {
      {"parameters", [](std::istream& in) { load_context(in); }},
      {"plaintext", [&](std::istream& in) { load_plaintext(in, ctx); }},
      {"ciphertext", [&](std::istream& in) { load_ciphertext(in, ctx); }},
      {"public_key", [&](std::istream& in) { load_public_key(in, ctx); }},
      {"relinearization_key", [&](std::istream& in) { load_relinearization_key(in, ctx); }},
      {"galois_keys", [&](std::istream& in) { GaloisKeyFile(in, ctx).load_all(); }},
      {"secret_key", [&](std::istream& in) { load_secret_key(in, ctx); }},
      {"sparse_encapsulation_keys", [&](std::istream& in) { load_sparse_encapsulation_keys(in, ctx); }},
  };
  for (const auto& [kind, load] : loaders) {
    int seeds = 0;
    for (const auto& entry : std::filesystem::directory_iterator(root / kind)) {
      std::ifstream in(entry.path(), std::ios::binary);
      EXPECT_NO_THROW(load(in)) << entry.path() << ": regenerate with fhelium_fuzz_corpus tests/fuzz/corpus";
      ++seeds;
    }
    EXPECT_GE(seeds, 1) << kind;
  }
}

// ---- refusals ----

TEST_F(SerializationTest, TruncatedAtEveryHeaderFieldAndInThePayload) {
  const std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  for (std::size_t length = 0; length < header_size; ++length) {
    auto in = input(bytes.substr(0, length));
    const std::string message = error_of<FormatError>([&] { load_ciphertext(in, ctx); });
    EXPECT_CONTAINS(message, length == 0 ? "empty" : "truncated header");
  }
  EXPECT_CONTAINS(error_of<FormatError>([&] {
                    auto in = input(bytes.substr(0, 20));
                    load_ciphertext(in, ctx);
                  }),
                  "context fingerprint");
  for (std::size_t length = header_size; length < bytes.size(); length += 997) {
    auto in = input(bytes.substr(0, length));
    EXPECT_CONTAINS(error_of<FormatError>([&] { load_ciphertext(in, ctx); }), "remain in the input");
    PipeBuf pipe(bytes.substr(0, length));  // unseekable: found while reading
    std::istream pin(&pipe);
    EXPECT_CONTAINS(error_of<FormatError>([&] { load_ciphertext(pin, ctx); }), "truncated");
  }
  PipeBuf pipe(bytes.substr(0, bytes.size() - 3));
  std::istream pin(&pipe);
  EXPECT_CONTAINS(error_of<FormatError>([&] { load_ciphertext(pin, ctx); }), "integrity check ends after 5 of 8");
}

TEST_F(SerializationTest, FlippedByteInHeaderIsRefused) {
  const std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  for (std::size_t at = 0; at < header_size; ++at) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    auto in = input(bad);
    const std::string message = error_of<FormatError>([&] { load_ciphertext(in, ctx); });
    if (at >= 10) {
      EXPECT_CONTAINS(message, "header check failed");
    }
  }
}

TEST_F(SerializationTest, FlippedByteInPayloadIsRefused) {
  for (bool compress : {false, true}) {
    const std::string bytes = saved([&](std::ostream& out) {
      save_ciphertext(out, ctx, fresh_ciphertext(), SaveOptions{compress, 3});
    });
    for (std::size_t at :
         {header_size, header_size + 12345 % (bytes.size() - header_size - 8), bytes.size() - 9, bytes.size() - 1}) {
      std::string bad = bytes;
      bad[at] = static_cast<char>(bad[at] ^ 0x01);
      auto in = input(bad);
      const std::string message = error_of<FormatError>([&] { load_ciphertext(in, ctx); });
      // A corrupted zstd frame may fail to decompress before the check is read.
      if (!compress || at == bytes.size() - 1) {
        EXPECT_CONTAINS(message, "integrity check failed");
      }
    }
  }
}

TEST_F(SerializationTest, ResidueEqualToItsPrimeIsRefused) {
  const HostValue ct = fresh_ciphertext();
  const std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, ct); });
  // Component 1, limb 2, coefficient 7.
  const std::size_t word = (static_cast<std::size_t>(ct.state.limbs(ctx)) + 2) * ctx.ring_degree() + 7;
  std::string bad = bytes;
  put(bad, header_size + 8 * word, ctx.q()[2].value);
  reseal(bad);
  auto in = input(bad);
  const std::string message = error_of<FormatError>([&] { load_ciphertext(in, ctx); });
  EXPECT_CONTAINS(message, "component 1, limb 2, coefficient 7");
  EXPECT_CONTAINS(message, "not below its prime " + std::to_string(ctx.q()[2].value));

  // The same in a key, behind compression.
  const HostSwitchKey rk = f.keygen.relinearization_key(f.sk);
  HostSwitchKey broken = rk;
  broken.a_seed.reset();
  broken.data[5] = ctx.key_modulus(0).value;
  auto kin = input(saved([&](std::ostream& out) { save_relinearization_key(out, ctx, broken, SaveOptions{true, 1}); }));
  EXPECT_CONTAINS(error_of<FormatError>([&] { load_relinearization_key(kin, ctx); }), "digit 0 b, key limb 0");
}

TEST_F(SerializationTest, DeclaredSizeLargerThanTheInputIsRefusedBeforeAllocating) {
  std::string bytes = saved([&](std::ostream& out) {
    save_relinearization_key(out, ctx, f.keygen.relinearization_key(f.sk), SaveOptions{true, 3});
  });
  const auto stored = get<std::uint64_t>(bytes, 80);
  put(bytes, 80, stored + 4096);  // still below zstd's bound for the payload
  put(bytes, 88, XXH3_64bits(bytes.data(), 88));
  auto in = input(bytes);
  EXPECT_CONTAINS(error_of<FormatError>([&] { load_relinearization_key(in, ctx); }), "remain in the input");

  // A payload size that the state does not allow is refused outright.
  std::string wrong = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  put(wrong, 72, std::uint64_t{1} << 60);
  put(wrong, 80, std::uint64_t{1} << 60);
  put(wrong, 88, XXH3_64bits(wrong.data(), 88));
  auto win = input(wrong);
  EXPECT_CONTAINS(error_of<FormatError>([&] { load_ciphertext(win, ctx); }), "declares a payload of");
}

TEST_F(SerializationTest, AnotherContextIsRefusedNamingBothFingerprints) {
  Fixture other(small_params(11, 4, 2));
  const std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  auto in = input(bytes);
  const std::string message = error_of<StateError>([&] { load_ciphertext(in, *other.context); });
  EXPECT_CONTAINS(message, to_hex(context_fingerprint(ctx), 8));
  EXPECT_CONTAINS(message, to_hex(context_fingerprint(*other.context), 8));
}

TEST_F(SerializationTest, AnotherWordSizeIsRefusedNamingBoth) {
  std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  bytes[14] = 32;
  reseal(bytes);
  auto in = input(bytes);
  const std::string message = error_of<StateError>([&] { load_ciphertext(in, ctx); });
  EXPECT_CONTAINS(message, "32-bit words");
  EXPECT_CONTAINS(message, "64-bit words");
}

TEST_F(SerializationTest, UnknownVersionIsRefusedNamingBoth) {
  std::string bytes = saved([&](std::ostream& out) { save_public_key(out, ctx, f.pk); });
  for (std::uint16_t version : {std::uint16_t{2}, std::uint16_t{0}}) {
    put(bytes, 8, version);
    reseal(bytes);
    auto in = input(bytes);
    const std::string message = error_of<FormatError>([&] { load_public_key(in, ctx); });
    EXPECT_CONTAINS(message, "format version " + std::to_string(version));
    EXPECT_CONTAINS(message, "reads version 1");
  }
}

TEST_F(SerializationTest, WrongObjectKindIsRefusedNamingBoth) {
  auto in = input(saved([&](std::ostream& out) { save_public_key(out, ctx, f.pk); }));
  const std::string message = error_of<FormatError>([&] { load_ciphertext(in, ctx); });
  EXPECT_CONTAINS(message, "expected a ciphertext");
  EXPECT_CONTAINS(message, "holds a public key");
}

TEST_F(SerializationTest, SecretKeyWhereAPublicKeyIsExpectedIsRefused) {
  auto in = input(saved([&](std::ostream& out) { save_secret_key_unprotected(out, ctx, f.sk); }));
  const std::string message = error_of<FormatError>([&] { load_public_key(in, ctx); });
  EXPECT_CONTAINS(message, "expected a public key");
  EXPECT_CONTAINS(message, "holds a secret key");
}

TEST_F(SerializationTest, GaloisKeyNotHeldIsAMissingKeyNamingTheElements) {
  const std::vector<HostSwitchKey> keys = {f.keygen.galois_key(f.sk, ctx.galois_element(1))};
  auto in = input(saved([&](std::ostream& out) { save_galois_keys(out, ctx, keys); }));
  GaloisKeyFile file(in, ctx);
  const std::uint32_t absent = ctx.galois_element(2);
  const std::string message = error_of<MissingKeyError>([&] { file.load(absent); });
  EXPECT_CONTAINS(message, "element " + std::to_string(absent));
  EXPECT_CONTAINS(message, "holds elements " + std::to_string(keys[0].galois_element));
}

TEST_F(SerializationTest, IllegalStatesAreRefused) {
  const std::string bytes = saved([&](std::ostream& out) { save_ciphertext(out, ctx, fresh_ciphertext()); });
  const auto forged = [&](std::size_t at, std::uint8_t value) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(value);
    put(bad, 88, XXH3_64bits(bad.data(), 88));
    auto in = input(bad);
    return error_of<FormatError>([&] { load_ciphertext(in, ctx); });
  };
  EXPECT_CONTAINS(forged(48, 9), "above the context's maximum level 3");
  EXPECT_CONTAINS(forged(52, 2), "domain 2");
  EXPECT_CONTAINS(forged(53, 7), "basis 7");
  EXPECT_CONTAINS(forged(54, 4), "4 components, expected 2..3");
  EXPECT_CONTAINS(forged(54, 1), "1 components");
  EXPECT_CONTAINS(forged(10, 9), "object kind 9 is unknown");
  EXPECT_CONTAINS(forged(12, 4), "unknown bits");
  EXPECT_CONTAINS(forged(12, 2), "declares a payload of");  // flagged seeded, but the payload is full
}

TEST_F(SerializationTest, SecretKeyFileIsCreatedWithMode0600) {
  const auto dir = std::filesystem::temp_directory_path() / ("fhelium-ser-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "secret.key").string();
  const mode_t old_mask = ::umask(0);  // a permissive umask must not widen the mode
  save_secret_key_file_unprotected(path, ctx, f.sk);
  ::umask(old_mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  save_secret_key_file_unprotected(path, ctx, f.sk);  // a 0600 file of ours is overwritten
  EXPECT_EQ(load_secret_key_file(path, ctx).coefficients(), f.sk.coefficients());

  const std::string open_file = (dir / "open.key").string();
  { std::ofstream(open_file) << "x"; }
  ::chmod(open_file.c_str(), 0644);
  EXPECT_CONTAINS(error_of<IoError>([&] { save_secret_key_file_unprotected(open_file, ctx, f.sk); }), "mode 0644");
  std::ifstream still(open_file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(still), {}), "x") << "the refused file is untouched";
  std::filesystem::remove_all(dir);
}

TEST_F(SerializationTest, SavingAnObjectOfAnotherContextIsRefused) {
  Fixture other(small_params(11, 4, 2));
  const HostValue ct = fresh_ciphertext();
  std::ostringstream out;
  EXPECT_THROW(save_ciphertext(out, *other.context, ct), StateError);
  EXPECT_THROW(save_public_key(out, *other.context, f.pk), StateError);
  EXPECT_THROW(save_relinearization_key(out, ctx, f.keygen.galois_key(f.sk, 3)), InvalidArgumentError);
  EXPECT_THROW(save_ciphertext(out, ctx, ct, SaveOptions{true, 99}), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::test
