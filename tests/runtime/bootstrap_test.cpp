// Bootstrapping: ModRaise against its definition, the special FFT's stages
// against the encoder, and a full bootstrap at N = 2^12 (insecure parameters,
// tests only) against the message and the clear evaluator, bit-exact between
// cpu and the backend named by FHELIUM_RUNTIME_TEST_BACKEND when one is.
#include "fhelium/circuits/bootstrap.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/special_fft.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::circuits {
namespace {

using runtime::KeyRequirements;
using test::Fixture;
using test::max_error;
using test::Message;

// The bootstrap layout with a sparse main secret (K = 16): the in-program
// circuit without the encapsulation. Insecure, tests only.
CkksParameters bootstrap_params(int log_n, WordSize word_size = WordSize::bits64) {
  CkksParameters p = bootstrap_parameters(log_n, 2, {}, word_size);
  p.hamming_weight = 32;
  p.allow_insecure = true;
  return p;
}

std::vector<HostSwitchKey> galois_keys_for(Fixture& f, const KeyRequirements& keys) {
  std::vector<HostSwitchKey> out;
  for (std::uint32_t element : keys.galois_elements(*f.context)) out.push_back(f.keygen.galois_key(f.sk, element));
  return out;
}

// Clear slots through a list of diagonal matrices.
Message through(const std::vector<Diagonals>& matrices, Message v) {
  for (const Diagonals& m : matrices) v = LinearTransform::from_diagonals(m, v.size(), v.size()).apply_clear(v);
  return v;
}

// run_on(engine) on the backend named by FHELIUM_RUNTIME_TEST_BACKEND, when
// there is one: its residues must equal cpu's, `expected`.
template <class Run>
void expect_bit_exact_on_test_backend(const Fixture& f, Run&& run_on, const HostValue& expected) {
  const test::TestBackend other = test::runtime_test_backend();
  if (!other.backend) return;
  std::optional<Engine> engine;
  try {
    engine.emplace(f.context, other.backend);
  } catch (const BackendError& e) {
    // A backend may refuse the 32-bit family as a whole, saying so (cuda until its kernels land); nothing else.
    if (f.context->word_size() != WordSize::bits32 ||
        std::string(e.what()).find("is of the 32-bit word family") == std::string::npos) {
      throw;
    }
    std::cout << "bit-exact check not run: " << e.what() << "\n";
    return;
  }
  EXPECT_TRUE(run_on(*engine).data == expected.data) << "cpu and the test backend differ";
}

// A configuration whose circuit is the same on cpu and on the test backend:
// the giant rotations as rotate_sums only where that backend has them too.
BootstrapConfig on_every_backend(BootstrapConfig config = {}) {
  const test::TestBackend other = test::runtime_test_backend();
  config.rotate_sums = !other.backend || other.backend->supports_rotate_sum();
  return config;
}

// An n-slot message as the encoder packs it: repeated over all `slots`.
Message repeated_over(const Message& m, std::size_t slots) {
  Message out(slots);
  for (std::size_t i = 0; i < slots; ++i) out[i] = m[i % m.size()];
  return out;
}

std::size_t bit_reverse(std::size_t x, std::size_t n) {
  std::size_t r = 0;
  for (std::size_t bit = 1; bit < n; bit <<= 1) r = (r << 1) | ((x & bit) ? 1 : 0);
  return r;
}

TEST(ModRaise, EveryLimbIsTheCenteredLiftOfLevelZero) {
  Fixture f(test::small_params(10, 3), 3);
  const Ciphertext x = f.engine.drop_to_level(f.encrypt(f.random_message(1.0)), 0);
  const Ciphertext raised = f.engine.mod_raise(x);
  EXPECT_EQ(raised.state.level, f.context->max_level());
  EXPECT_EQ(raised.state.scale, x.state.scale);
  EXPECT_EQ(raised.state.domain, Domain::ntt);
  // Back at level 0 the residues are x's, bit for bit.
  EXPECT_EQ(f.engine.download(f.engine.drop_to_level(raised, 0)).data, f.engine.download(x).data);
  const HostValue c = f.engine.download(f.engine.to_coefficient(raised));
  const u64 q0 = f.context->q()[0].value;
  const std::size_t n = f.context->ring_degree();
  for (int comp = 0; comp < 2; ++comp) {
    const u64* base = c.limb(*f.context, comp, 0);
    for (int limb = 1; limb <= c.state.level; ++limb) {
      const u64 qi = f.context->q()[static_cast<std::size_t>(limb)].value;
      const u64* got = c.limb(*f.context, comp, limb);
      for (std::size_t k = 0; k < n; ++k) {
        const u64 v = base[k];
        const u64 expected = v > (q0 - 1) / 2 ? (qi - (q0 - v) % qi) % qi : v % qi;
        ASSERT_EQ(got[k], expected) << "component " << comp << " limb " << limb << " coefficient " << k;
      }
    }
  }
  EXPECT_THROW(f.engine.mod_raise(f.encrypt(f.random_message(1.0), 1)), StateError);
}

// With a dense secret the N = 2^16 layout with 10 levels left is within the
// 2025 table; at 2^15 it is not, and Context::create says so.
TEST(BootstrapParameters, TheN16LayoutIsWithinTheSecurityTable) {
  const CkksParameters p = bootstrap_parameters(16, 10);
  EXPECT_EQ(p.hamming_weight, 0);
  EXPECT_FALSE(p.allow_insecure);
  EXPECT_EQ(p.max_level() - BootstrapConfig{}.depth(), 10);
  const auto context = Context::create(p);
  EXPECT_NEAR(context->log_qp(), 1739.0, 1.0);
  EXPECT_THROW(Context::create(bootstrap_parameters(15, 1)), SecurityError);
  // The named preset is this layout.
  const CkksParameters named = preset("slots32768_scale40_levels10_bootstrap");
  EXPECT_EQ(named.q_bits, p.q_bits);
  EXPECT_EQ(named.p_bits, p.p_bits);
  EXPECT_EQ(named.scale, p.scale);
}

// The 32-bit family's layout at N = 2^16: 10 user levels, CoeffToSlot and
// EvalMod on wide levels of about 2^61, within the table at four digits.
TEST(BootstrapParameters, TheN16Int32LayoutIsWithinTheSecurityTable) {
  const BootstrapConfig config;
  const CkksParameters p = bootstrap_parameters(16, 10, config, WordSize::bits32);
  EXPECT_EQ(p.word_size, WordSize::bits32);
  EXPECT_EQ(p.hamming_weight, 0);
  EXPECT_FALSE(p.allow_insecure);
  EXPECT_EQ(p.max_level() - config.depth(), 10);
  const auto context = Context::create(p);
  EXPECT_LE(context->log_qp(), 1747.0);
  EXPECT_GT(context->log_qp(), 1700.0);
  EXPECT_EQ(context->key_digits(), 4);
  const int wide_from = context->max_level() - config.coeff_to_slot_levels - config.eval_mod_depth() + 1;
  for (int level = 1; level <= context->max_level(); ++level) {
    EXPECT_LT(std::fabs(std::log2(context->rescale_divisor(level)) - (level >= wide_from ? 61 : 40)), 0.5) << level;
  }
  const CkksParameters named = preset("slots32768_scale40_levels10_bootstrap_int32");
  EXPECT_EQ(named.q_bits, p.q_bits);
  EXPECT_EQ(named.p_bits, p.p_bits);
  EXPECT_EQ(named.wide_levels, p.wide_levels);
  EXPECT_EQ(named.word_size, p.word_size);
}

TEST(KeySwitch, MovesTheMessageToAnotherSecret) {
  Fixture f(test::small_params(11, 3, 2), 5);
  const SecretKey other = f.keygen.secret_key();
  const SwitchKey key = f.engine.upload_switching_key(f.keygen.switching_key(f.sk, other));
  const Message m = f.random_message(1.0);
  for (int level : {3, 0}) {
    const Ciphertext x = f.encrypt(m, level);
    const Ciphertext y = f.engine.key_switch(x, key);
    EXPECT_EQ(y.state, x.state);
    const Message got = f.encoder.decode(f.decryptor.decrypt(f.engine.download(y), other), f.slots());
    EXPECT_LT(max_error(m, got), 1e-6) << "level " << level;
    // Under the old secret it is noise.
    EXPECT_GT(max_error(m, f.decrypt(y)), 1.0) << "level " << level;
  }
  EXPECT_THROW(f.engine.upload_switching_key(f.keygen.galois_key(f.sk, f.context->galois_element(1))),
               InvalidArgumentError);
  EXPECT_THROW(f.engine.key_switch(f.encrypt(m), SwitchKey{}), MissingKeyError);
}

TEST(SpecialFft, StagesReproduceTheEncoder) {
  Fixture f(test::small_params(10, 1), 4);
  const std::size_t half = f.slots();
  const double scale = std::ldexp(1.0, 50);
  const u64 q = f.context->q()[0].value;
  auto centered = [&](u64 r) { return r > q / 2 ? -static_cast<double>(q - r) : static_cast<double>(r); };
  // Full slots and sparse ones (the coefficients at multiples of g = N / 2n).
  for (std::size_t n : {half, half / 8}) {
    SCOPED_TRACE(std::to_string(n) + " slots");
    const Message z = f.random_message(1.0, n);
    // w_k = (c_(kg) + i c_(N/2 + kg)) / scale from the encoder's own coefficients.
    HostValue pt = f.encoder.encode(z, 0, scale, Domain::coefficient);
    const std::size_t g = half / n;
    Message w_reversed(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t at = bit_reverse(k, n) * g;
      w_reversed[k] = {centered(pt.data[at]) / scale, centered(pt.data[half + at]) / scale};
    }
    const int stages = std::countr_zero(n);
    for (int groups : {1, 3, stages}) {
      const auto cts = coeff_to_slot_matrices(f.context->ring_degree(), n, groups);
      const auto stc = slot_to_coeff_matrices(f.context->ring_degree(), n, groups);
      ASSERT_EQ(cts.size(), static_cast<std::size_t>(groups));
      EXPECT_LT(max_error(w_reversed, through(cts, z)), 1e-12) << groups << " groups";
      EXPECT_LT(max_error(z, through(stc, w_reversed)), 1e-12) << groups << " groups";
      // A group of s consecutive stages has at most 2^(s+1) - 1 diagonals.
      const std::size_t largest = static_cast<std::size_t>((stages + groups - 1) / groups);
      for (const auto& m : cts) EXPECT_LE(m.size(), (std::size_t{2} << largest) - 1);
    }
  }
}

// The bootstrap tests on both word families: 64-bit words, and 32-bit words
// (the rational chain, wide levels for CoeffToSlot and EvalMod, a level 0 of
// two primes).
class Bootstrap : public ::testing::TestWithParam<WordSize> {
 protected:
  // One fixture per family, made on first use.
  Fixture& fixture() const {
    std::unique_ptr<Fixture>& f = fixtures_[GetParam()];
    if (!f) f = std::make_unique<Fixture>(bootstrap_params(12, GetParam()), 7);
    return *f;
  }
  static void TearDownTestSuite() { fixtures_.clear(); }
  static std::map<WordSize, std::unique_ptr<Fixture>> fixtures_;
};
std::map<WordSize, std::unique_ptr<Fixture>> Bootstrap::fixtures_;

INSTANTIATE_TEST_SUITE_P(, Bootstrap, ::testing::Values(WordSize::bits64, WordSize::bits32),
                         [](const ::testing::TestParamInfo<WordSize>& family) {
                           return family.param == WordSize::bits32 ? "W32" : "W64";
                         });

TEST_P(Bootstrap, RestoresTheMessageAtAHighLevelBitExactOnEveryBackend) {
  Fixture& f = fixture();
  const BootstrapConfig config = on_every_backend();
  const int depth = config.depth();
  ASSERT_EQ(depth, 16);
  const KeyRequirements keys = Bootstrapper::required_keys(f.context, config);
  EXPECT_TRUE(keys.relinearization);
  EXPECT_TRUE(keys.conjugation);
  const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
  const std::vector<HostSwitchKey> galois = galois_keys_for(f, keys);

  // A random message (coefficients of about 1 / sqrt(slots)) and a constant
  // one (a single coefficient of 1: the sine's curvature at its largest).
  const Message m = f.random_message(1.0);
  const Message constant(f.slots(), {1.0, 0.0});
  const HostValue x = f.encryptor.encrypt(f.encoder.encode(m, 0, f.scale()), f.pk);
  const HostValue xc = f.encryptor.encrypt(f.encoder.encode(constant, 0, f.scale()), f.pk);
  HostValue yc;
  auto run_on = [&](const Engine& engine) {
    const RelinKey relin_key = engine.upload_relinearization_key(relin);
    const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
    const Bootstrapper bootstrapper(engine, relin_key, galois_keys, config);
    EXPECT_EQ(bootstrapper.output_level(), f.context->max_level() - depth);
    // The stages partition the program; ModRaise opens it, EvalMod holds
    // the relinearizations and the transforms the rotations.
    const BootstrapStages& st = bootstrapper.stages();
    const auto& nodes = bootstrapper.program().program().nodes();
    EXPECT_EQ(st.end, nodes.size());
    EXPECT_TRUE(st.mod_raise < st.coeff_to_slot && st.coeff_to_slot < st.eval_mod && st.eval_mod < st.slot_to_coeff &&
                st.slot_to_coeff < st.end);
    EXPECT_EQ(nodes[st.coeff_to_slot - 1].op, runtime::OpKind::mod_raise);
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const bool in_eval_mod = k >= st.eval_mod && k < st.slot_to_coeff;
      if (nodes[k].op == runtime::OpKind::multiply_relinearize_rescale) {
        EXPECT_TRUE(in_eval_mod) << k;
      }
      if (nodes[k].op == runtime::OpKind::rotate_hoisted) {
        EXPECT_FALSE(in_eval_mod) << k;
      }
    }
    EXPECT_TRUE(same_scale(bootstrapper.output_scale(), f.scale()));
    const Ciphertext y = bootstrapper.bootstrap(engine.upload_ciphertext(x));
    yc = engine.download(bootstrapper.bootstrap(engine.upload_ciphertext(xc)));
    EXPECT_EQ(y.state.level, f.context->max_level() - depth);
    EXPECT_TRUE(same_scale(y.state.scale, f.scale()));
    return engine.download(y);
  };
  const HostValue y = run_on(f.engine);
  const Message got = f.encoder.decode(f.decryptor.decrypt(y, f.sk), f.slots());
  const double error = max_error(m, got);
  // 25.6 bits measured (max over 2048 complex slots of norm <= sqrt(2)); the
  // constant message 24.8.
  const double constant_error = max_error(constant, f.encoder.decode(f.decryptor.decrypt(yc, f.sk), f.slots()));
  EXPECT_LT(constant_error, std::ldexp(1.0, -22)) << "constant message: " << -std::log2(constant_error) << " bits";
  EXPECT_LT(error, std::ldexp(1.0, -22)) << "bootstrapping error " << error << " (" << -std::log2(error) << " bits)";
  RecordProperty("max_error_bits", std::to_string(-std::log2(error)));

  expect_bit_exact_on_test_backend(f, run_on, y);
}

// A dense main secret through the sparse-secret encapsulation: the key to
// the ephemeral secret lives at q_0 p_0 only.
TEST(BootstrapEncapsulated, RestoresTheMessageUnderADenseSecretBitExactOnEveryBackend) {
  CkksParameters p = bootstrap_parameters(12, 2);
  p.allow_insecure = true;  // N = 2^12: tests only
  Fixture f(p, 12);
  const auto keys = SparseEncapsulationKeys::generate(f.context, f.sk, f.rng);
  EXPECT_EQ(keys.low_context->max_level(), 0);
  EXPECT_EQ(keys.low_context->special_count(), 1);
  EXPECT_EQ(keys.low_context->q()[0].value, f.context->q()[0].value);
  EXPECT_NEAR(keys.low_context->log_qp(), 121.0, 0.5);
  EXPECT_EQ(keys.dense_to_sparse.context_id, keys.low_context->id());
  EXPECT_EQ(keys.sparse_to_dense.context_id, f.context->id());

  const KeyRequirements needs = Bootstrapper::required_keys(f.context);
  const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
  const std::vector<HostSwitchKey> galois = galois_keys_for(f, needs);
  const Message m = f.random_message(1.0);
  const HostValue x = f.encryptor.encrypt(f.encoder.encode(m, 1, f.scale()), f.pk);
  auto run_on = [&](const Engine& engine) {
    const RelinKey relin_key = engine.upload_relinearization_key(relin);
    const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
    // Moved, and the original gone: the program's borrowed keys stay valid.
    std::optional<Bootstrapper> made(std::in_place, engine, relin_key, galois_keys, keys, on_every_backend());
    const Bootstrapper bootstrapper = std::move(*made);
    made.reset();
    EXPECT_EQ(bootstrapper.output_level(), 2);
    // Without the encapsulation keys a dense secret cannot link; the error names them.
    try {
      Bootstrapper unlinked(engine, relin_key, galois_keys);
      ADD_FAILURE() << "a dense secret linked without the encapsulation keys";
    } catch (const MissingKeyError& e) {
      EXPECT_NE(std::string(e.what()).find("sparse-secret encapsulation keys"), std::string::npos) << e.what();
    }
    // An input of another scale is named before anything runs.
    EXPECT_THROW(bootstrapper.bootstrap(
                     engine.upload_ciphertext(f.encryptor.encrypt(f.encoder.encode(m, 0, 2.0 * f.scale()), f.pk))),
                 StateError);
    return engine.download(bootstrapper.bootstrap(engine.upload_ciphertext(x)));
  };
  const HostValue y = run_on(f.engine);
  const double error = max_error(m, f.encoder.decode(f.decryptor.decrypt(y, f.sk), f.slots()));
  EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
  expect_bit_exact_on_test_backend(f, run_on, y);
  // Keys of another context are refused.
  Fixture g(p, 13);
  EXPECT_THROW(SparseEncapsulationKeys::generate(f.context, g.sk, f.rng), StateError);
}

// A dense main secret in the 32-bit family: the encapsulation's low context
// is level 0's two primes and two special primes (about 122 bits).
TEST(BootstrapEncapsulated, The32BitFamilyRestoresTheMessageBitExactOnEveryBackend) {
  CkksParameters p = bootstrap_parameters(12, 2, {}, WordSize::bits32);
  p.allow_insecure = true;  // N = 2^12: tests only
  Fixture f(p, 14);
  const auto keys = SparseEncapsulationKeys::generate(f.context, f.sk, f.rng);
  EXPECT_EQ(keys.low_context->q_count(), 2);
  EXPECT_EQ(keys.low_context->special_count(), 2);
  EXPECT_NEAR(keys.low_context->log_qp(), 122.0, 1.0);
  const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
  const std::vector<HostSwitchKey> galois = galois_keys_for(f, Bootstrapper::required_keys(f.context));
  const Message m = f.random_message(1.0);
  const HostValue x = f.encryptor.encrypt(f.encoder.encode(m, 0, f.scale()), f.pk);
  auto run_on = [&](const Engine& engine) {
    const RelinKey relin_key = engine.upload_relinearization_key(relin);
    const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
    const Bootstrapper bootstrapper(engine, relin_key, galois_keys, keys, on_every_backend());
    EXPECT_EQ(bootstrapper.output_level(), f.context->max_level() - BootstrapConfig{}.depth());
    const Ciphertext y = bootstrapper.bootstrap(engine.upload_ciphertext(x));
    EXPECT_EQ(y.state.word_size, WordSize::bits32);
    EXPECT_TRUE(same_scale(y.state.scale, f.scale()));
    return engine.download(y);
  };
  const HostValue y = run_on(f.engine);
  const double error = max_error(m, f.encoder.decode(f.decryptor.decrypt(y, f.sk), f.slots()));
  // 26.1 bits measured (the 64-bit layout: 25.6).
  EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
  expect_bit_exact_on_test_backend(f, run_on, y);
}

// Ciphertext products in the EvalMod stage of a bootstrap program.
std::size_t eval_mod_products(Fixture& f, const BootstrapConfig& config) {
  ProgramBuilder b(f.context, "bootstrap");
  BootstrapStages st;
  b.output("y", bootstrap(b, b.input("x", f.engine.download(f.encrypt(Message(1), 0)).state), config, &st));
  std::size_t products = 0;
  for (std::size_t k = st.eval_mod; k < st.slot_to_coeff; ++k) {
    products += b.program().nodes()[k].op == runtime::OpKind::multiply_relinearize_rescale;
  }
  return products;
}

// Sparse slots: the trace, then one EvalMod for the packed real and
// imaginary parts (n <= N/4), bit-exact between backends; the output is an
// encoding of n slots again.
TEST_P(Bootstrap, SparseSlotsBitExactOnEveryBackend) {
  Fixture& f = fixture();
  for (std::size_t n : {std::size_t{2}, std::size_t{64}, f.slots() / 2}) {
    SCOPED_TRACE(std::to_string(n) + " slots");
    BootstrapConfig config = on_every_backend();
    config.slots = n;
    config.coeff_to_slot_levels = config.slot_to_coeff_levels = std::min(3, std::countr_zero(n));
    const KeyRequirements keys = Bootstrapper::required_keys(f.context, config);
    // The trace's rotations by n, 2n, .., N/4 are among the keys.
    for (std::size_t step = n; step < f.slots(); step *= 2) {
      EXPECT_TRUE(keys.galois_elements(*f.context).count(f.context->galois_element(static_cast<long>(step))))
          << "trace step " << step;
    }
    const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
    const std::vector<HostSwitchKey> galois = galois_keys_for(f, keys);
    const Message m = f.random_message(1.0, n);
    const HostValue x = f.encryptor.encrypt(f.encoder.encode(m, 0, f.scale()), f.pk);
    auto run_on = [&](const Engine& engine) {
      const RelinKey relin_key = engine.upload_relinearization_key(relin);
      const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
      const Bootstrapper bootstrapper(engine, relin_key, galois_keys, config);
      const Ciphertext y = bootstrapper.bootstrap(engine.upload_ciphertext(x));
      EXPECT_EQ(y.state.level, f.context->max_level() - config.depth());
      return engine.download(y);
    };
    const HostValue y = run_on(f.engine);
    // Every slot of the N/2 repeats the n-slot message.
    const Message got = f.encoder.decode(f.decryptor.decrypt(y, f.sk), f.slots());
    const Message repeated = repeated_over(m, f.slots());
    const double error = max_error(repeated, got);
    EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
    // One EvalMod: half the products of the full-slot bootstrap's two.
    BootstrapConfig full_config = config;
    full_config.slots = 0;
    EXPECT_EQ(2 * eval_mod_products(f, config), eval_mod_products(f, full_config));
    expect_bit_exact_on_test_backend(f, run_on, y);
  }
  BootstrapConfig odd;
  odd.slots = 48;
  EXPECT_THROW(Bootstrapper::required_keys(f.context, odd), InvalidArgumentError);
}

// Real messages at full slots: one EvalMod; the result is the real part of
// any input (its imaginary parts are removed before ModRaise).
TEST_P(Bootstrap, RealOnlyRunsOneEvalModAndReturnsTheRealPart) {
  Fixture& f = fixture();
  BootstrapConfig config = on_every_backend();
  config.real_only = true;
  EXPECT_EQ(2 * eval_mod_products(f, config), eval_mod_products(f, {}));
  const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
  const std::vector<HostSwitchKey> galois = galois_keys_for(f, Bootstrapper::required_keys(f.context, config));
  const Message m = f.random_message(1.0);
  Message real_part(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) real_part[i] = m[i].real();
  const HostValue x = f.encryptor.encrypt(f.encoder.encode(m, 0, f.scale()), f.pk);
  auto run_on = [&](const Engine& engine) {
    const RelinKey relin_key = engine.upload_relinearization_key(relin);
    const GaloisKeys galois_keys = engine.upload_galois_keys(galois);
    const Bootstrapper bootstrapper(engine, relin_key, galois_keys, config);
    return engine.download(bootstrapper.bootstrap(engine.upload_ciphertext(x)));
  };
  const HostValue y = run_on(f.engine);
  const double error = max_error(real_part, f.encoder.decode(f.decryptor.decrypt(y, f.sk), f.slots()));
  EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
  expect_bit_exact_on_test_backend(f, run_on, y);
  config.slots = f.slots() / 2;
  EXPECT_THROW(Bootstrapper::required_keys(f.context, config), InvalidArgumentError);
}

// Every add, sub and sum of the program joins values of one scale, up to
// the double's rounding: Engine::add accepts scales 1e-9 apart, and the
// Chebyshev powers read at such a scale made a bias in EvalMod that
// SlotToCoeff gathered on slot 0 (2^-20 at N = 2^16).
TEST_P(Bootstrap, AddsValuesOfExactlyOneScale) {
  Fixture& f = fixture();
  ProgramBuilder b(f.context, "scales");
  const ValueRef x = b.input("x", f.engine.download(f.encrypt(Message(1), 0)).state);
  b.output("y", bootstrap(b, x, BootstrapConfig{}));
  int sums = 0;
  for (const runtime::Node& node : b.program().nodes()) {
    if (node.op != runtime::OpKind::add && node.op != runtime::OpKind::sub && node.op != runtime::OpKind::sum) continue;
    ++sums;
    const double scale = b.state(ValueRef{node.args[0]}).scale;
    for (const int arg : node.args) {
      EXPECT_NEAR(b.state(ValueRef{arg}).scale / scale, 1.0, 1e-14) << "node " << sums << ", value " << arg;
    }
  }
  EXPECT_GT(sums, 40);
}

// Stage by stage against the clear evaluator of the same program, whose
// ModRaise adds nothing: CoeffToSlot's real part must differ from the clear
// one by I / K' with I an integer of at most K (the overflow bound), and
// EvalMod's output must equal the clear one (the sine forgets I). Full slots
// and a packed sparse count; measured at N = 2^12: CoeffToSlot 2^-45, EvalMod
// 2^-38.9 (the message's 2^-28.9 is that times about q_0 sqrt(N) / (2 pi M Delta)).
TEST_P(Bootstrap, EachStageAgainstTheClearEvaluator) {
  Fixture& f = fixture();
  const int bound = overflow_bound(*f.context, {});
  const double interval = bound + 1.0;  // K'
  for (std::size_t n : {f.slots(), f.slots() / 4}) {
    SCOPED_TRACE(std::to_string(n) + " slots");
    BootstrapConfig config;
    config.slots = n;
    ProgramBuilder b(f.context, "stages");
    BootstrapStages st;
    const ValueRef x = b.input("x", f.engine.download(f.encrypt(Message(1), 0)).state);
    b.output("y", bootstrap(b, x, config, &st));
    b.output("coefficients", st.coefficients_real);
    b.output("eval_mod", st.eval_mod_real);
    const RelinKey relin = f.relin_key();
    const GaloisKeys galois = f.engine.upload_galois_keys(galois_keys_for(f, b.required_keys()));
    runtime::Materials materials;
    materials.relinearization_key = &relin;
    materials.galois_keys = &galois;
    for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
    const runtime::Executable program = runtime::link(b.prepare(), f.engine, materials);

    // n slots, repeated over the N/2 as the encoder packs them (the clear
    // evaluator would pad a short input with zeros instead).
    const Message m = f.random_message(1.0, n);
    const Message repeated = repeated_over(m, f.slots());
    const runtime::ValueTree out = program.run(runtime::ValueTree(runtime::ValueTree::Map{{"x", f.encrypt(m, 0)}}));
    const auto clear = runtime::evaluate_clear(b.program(), {{"x", repeated}}, b.constant_values(), f.slots());
    auto decrypted = [&](const std::string& name) { return f.decrypt(out.at(name).ciphertext()); };

    // CoeffToSlot: an integer shift of at most K, and what is left is noise.
    const Message coefficients = decrypted("coefficients");
    double coefficient_error = 0;
    long largest_shift = 0;
    for (std::size_t i = 0; i < coefficients.size(); ++i) {
      const double shift = interval * (coefficients[i].real() - clear.at("coefficients")[i].real());
      largest_shift = std::max(largest_shift, std::labs(std::lround(shift)));
      coefficient_error = std::max(coefficient_error, std::abs(shift - std::round(shift)) / interval);
      coefficient_error = std::max(coefficient_error, std::abs(coefficients[i].imag()));
    }
    EXPECT_LE(largest_shift, bound);
    EXPECT_GT(largest_shift, 0);  // ModRaise did overflow: the check is not vacuous
    EXPECT_LT(coefficient_error, std::ldexp(1.0, -40)) << -std::log2(coefficient_error) << " bits";
    // EvalMod: sin(2 pi K' y) forgets the shift. Its error against the
    // exact function (u + u^3 / 6, u = sin(2 pi K' y)) has no common part:
    // SlotToCoeff would add a bias of every slot into slot 0, N times.
    // Measured at most 2^-43.7; scales only within same_scale in the
    // Chebyshev powers gave 2^-41.9 (W64), so this is a weak guard:
    // AddsValuesOfExactlyOneScale is the one that fails on that cause.
    const Message eval_mod = decrypted("eval_mod");
    const double eval_mod_error = max_error(clear.at("eval_mod"), eval_mod);
    EXPECT_LT(eval_mod_error, std::ldexp(1.0, -34)) << -std::log2(eval_mod_error) << " bits";
    double bias = 0;
    for (std::size_t i = 0; i < eval_mod.size(); ++i) {
      const double u = std::sin(2.0 * std::numbers::pi * interval * clear.at("coefficients")[i].real());
      bias += eval_mod[i].real() - (u + u * u * u / 6.0);
    }
    bias /= static_cast<double>(eval_mod.size());
    EXPECT_LT(std::fabs(bias), std::ldexp(1.0, -42)) << "EvalMod's bias 2^" << std::log2(std::fabs(bias));
    // SlotToCoeff: the message.
    const double error = max_error(repeated, decrypted("y"));
    EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
    RecordProperty("stage_bits_" + std::to_string(n), std::to_string(-std::log2(coefficient_error)) + " " +
                                                          std::to_string(-std::log2(eval_mod_error)) + " " +
                                                          std::to_string(-std::log2(error)));
    std::cout << n << " slots: CoeffToSlot 2^" << std::log2(coefficient_error) << ", EvalMod 2^"
              << std::log2(eval_mod_error) << ", result 2^" << std::log2(error) << "\n";
  }
}

// Horner giants: fewer Galois keys for the same precision.
TEST_P(Bootstrap, HornerGiantsNeedFewerKeys) {
  Fixture& f = fixture();
  BootstrapConfig horner;
  horner.horner_giants = true;
  const KeyRequirements usual = Bootstrapper::required_keys(f.context);
  const KeyRequirements fewer = Bootstrapper::required_keys(f.context, horner);
  EXPECT_LT(fewer.galois_elements(*f.context).size(), usual.galois_elements(*f.context).size());
  const RelinKey relin = f.relin_key();
  const GaloisKeys galois = f.engine.upload_galois_keys(galois_keys_for(f, fewer));
  const Bootstrapper bootstrapper(f.engine, relin, galois, horner);
  const Message m = f.random_message(1.0);
  const double error = max_error(m, f.decrypt(bootstrapper.bootstrap(f.encrypt(m, 0))));
  EXPECT_LT(error, std::ldexp(1.0, -22)) << -std::log2(error) << " bits";
}

// Each transform's giant rotations as one rotate_sum: one node per
// transform stage instead of a rotate per giant step, the same keys, and
// the message restored as precisely (one ModDown rounds each stage's giants).
TEST_P(Bootstrap, GiantRotationsAsRotateSumsKeepThePrecision) {
  Fixture& f = fixture();
  BootstrapConfig separate, summed;
  separate.rotate_sums = false;
  summed.rotate_sums = true;
  const RelinKey relin = f.relin_key();
  const GaloisKeys galois = f.engine.upload_galois_keys(galois_keys_for(f, Bootstrapper::required_keys(f.context)));
  const Message m = f.random_message(1.0);
  const Ciphertext x = f.encrypt(m, 0);
  double bits[2];
  std::size_t rotate_sums[2], rotates[2];
  for (int i = 0; i < 2; ++i) {
    const Bootstrapper bootstrapper(f.engine, relin, galois, i == 0 ? separate : summed);
    const auto& nodes = bootstrapper.program().program().nodes();
    const auto count = [&](runtime::OpKind op) {
      return static_cast<std::size_t>(
          std::count_if(nodes.begin(), nodes.end(), [op](const runtime::Node& n) { return n.op == op; }));
    };
    rotate_sums[i] = count(runtime::OpKind::rotate_sum);
    rotates[i] = count(runtime::OpKind::rotate);
    bits[i] = -std::log2(max_error(m, f.decrypt(bootstrapper.bootstrap(x))));
  }
  EXPECT_EQ(rotate_sums[0], 0u);
  const BootstrapConfig defaults;
  EXPECT_EQ(rotate_sums[1], static_cast<std::size_t>(defaults.coeff_to_slot_levels + defaults.slot_to_coeff_levels));
  EXPECT_LT(rotates[1], rotates[0]);
  EXPECT_GT(bits[0], 22.0);
  EXPECT_GT(bits[1], 22.0);
  EXPECT_GT(bits[1], bits[0] - 0.5) << "separate " << bits[0] << " bits, rotate_sum " << bits[1];
  std::cout << "precision: separate giant rotations " << bits[0] << " bits, rotate_sums " << bits[1] << "\n";
}

TEST_P(Bootstrap, TheClearEvaluatorAgreesWithTheMessage) {
  Fixture& f = fixture();
  ProgramBuilder b(f.context, "bootstrap");
  ValueState x_state = f.engine.download(f.encrypt(Message(1), 0)).state;
  const ValueRef y = bootstrap(b, b.input("x", x_state));
  b.output("y", y);
  const Message m = f.random_message(1.0);
  const Message clear = runtime::evaluate_clear(b.program(), {{"x", m}}, b.constant_values(), f.slots()).at("y");
  // Only the sine's curvature and the interpolant separate them.
  EXPECT_LT(max_error(m, clear), 1e-5);
}

TEST_P(Bootstrap, WrongUseIsRefusedBeforeAnythingRuns) {
  Fixture& f = fixture();
  // Too few levels.
  Fixture shallow(test::small_params(10, 8), 8);
  ProgramBuilder b(shallow.context, "bootstrap");
  const ValueRef x = b.input("x", shallow.engine.download(shallow.encrypt(Message(1), 0)).state);
  try {
    bootstrap(b, x);
    FAIL() << "a context with 8 levels bootstrapped";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("consumes 16 levels"), std::string::npos) << e.what();
  }
  // A dense secret goes through the encapsulation (and needs its keys).
  CkksParameters dense = bootstrap_params(10);
  dense.hamming_weight = 0;
  Fixture dense_fixture(dense, 9);
  ProgramBuilder db(dense_fixture.context, "bootstrap");
  const ValueRef dx = db.input("x", dense_fixture.engine.download(dense_fixture.encrypt(Message(1), 0)).state);
  db.output("y", bootstrap(db, dx));
  EXPECT_TRUE(db.required_keys().sparse_encapsulation);
  EXPECT_FALSE(b.required_keys().sparse_encapsulation);
  EXPECT_EQ(overflow_bound(*dense_fixture.context, {}), 16);
  // Missing keys are named before anything runs.
  const RelinKey relin = f.relin_key();
  const GaloisKeys none = f.engine.upload_galois_keys({});
  EXPECT_THROW(Bootstrapper(f.engine, relin, none), MissingKeyError);
}

}  // namespace
}  // namespace fhelium::circuits
