// The 32-bit word family's rational chain: several primes per level, rescales
// that drop some primes and add a terminal one (params.hpp), on the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "fhelium/backend/residue_transfer.hpp"
#include "fhelium/primes.hpp"
#include "fhelium/serialization.hpp"
#include "fhelium/sparse_encapsulation.hpp"
#include "helpers.hpp"

namespace fhelium::test {
namespace {

__extension__ using i128 = __int128;

TEST(RationalChain, PresetsPassTheSecurityCheckWithTheirLevels) {
  const std::vector<std::pair<std::string, int>> presets = {{"slots8192_scale40_levels7_int32", 7},
                                                            {"slots16384_scale40_levels16_int32", 16},
                                                            {"slots32768_scale40_levels34_int32", 34}};
  for (const auto& [name, levels] : presets) {
    SCOPED_TRACE(name);
    const auto ctx = Context::create(preset(name));  // throws SecurityError above the table
    EXPECT_EQ(ctx->word_size(), WordSize::bits32);
    EXPECT_EQ(ctx->max_level(), levels);
    EXPECT_EQ(ctx->params().max_level(), levels);
    std::set<u64> seen;
    for (int limb = 0; limb < ctx->key_limbs(); ++limb) {
      const u64 q = ctx->key_modulus(limb).value;
      EXPECT_LT(q, u64{1} << 31);
      EXPECT_TRUE(is_prime(q));
      EXPECT_EQ((q - 1) % (2 * ctx->ring_degree()), 0u);
      EXPECT_TRUE(seen.insert(q).second);
    }
    for (int level = 1; level <= levels; ++level) {
      // Every rescale divides by the scale to within a fraction of a bit,
      // and the nominal scales stay nearer still.
      EXPECT_LT(std::fabs(std::log2(ctx->rescale_divisor(level)) - 40), 0.5) << level;
      EXPECT_LT(std::fabs(std::log2(ctx->nominal_scale(level)) - 40), 0.25) << level;
      EXPECT_LT(ctx->level_basis(level - 1).count, ctx->level_basis(level).count);
      EXPECT_EQ(ctx->level_of_limbs(ctx->level_basis(level).count), level);
    }
    EXPECT_EQ(ctx->level_basis(levels).count, ctx->q_count());
  }
}

TEST(RationalChain, MalformedChainsAreRefused) {
  CkksParameters p = small_int32_params(12);
  p.q_bits.pop_back();  // 9 mains: not 2 mod 4
  EXPECT_THROW(Context::create(p), ParameterError);
  p = small_int32_params(12);
  p.p_bits = {40};
  EXPECT_THROW(Context::create(p), ParameterError);
  p = small_int32_params(12);
  p.scale = std::ldexp(1.0, 30);  // no main pair of two primes below 2^31 reaches it
  EXPECT_THROW(Context::create(p), ParameterError);
  // Wide levels: not in the 64-bit family, not negative, not more than the primes after a chain of four.
  p = small_int32_params(12);
  p.wide_levels = 5;  // 10 primes for them leave 2
  EXPECT_THROW(Context::create(p), ParameterError);
  p.wide_levels = -1;
  EXPECT_THROW(Context::create(p), ParameterError);
  p = small_params(11, 3);
  p.wide_levels = 1;
  EXPECT_THROW(Context::create(p), ParameterError);
}

// small_int32_params with two wide levels above the rational chain.
CkksParameters with_wide_levels(int log_n) {
  CkksParameters p = small_int32_params(log_n);
  p.wide_levels = 2;
  p.q_bits.insert(p.q_bits.end(), 4, 30);
  return p;
}

// Wide levels hold two more primes each, whose product is within half a bit
// of 2^61; products at 2^61 rescale through them and into the chain below.
TEST(RationalChain, WideLevelsDropAPairNearTwoToTheSixtyOne) {
  Fixture f(with_wide_levels(11));
  const Context& ctx = *f.context;
  const int chain_top = small_int32_params(11).max_level();
  ASSERT_EQ(ctx.max_level(), chain_top + 2);
  EXPECT_EQ(ctx.params().max_level(), ctx.max_level());
  for (int level = chain_top + 1; level <= ctx.max_level(); ++level) {
    SCOPED_TRACE(level);
    EXPECT_EQ(ctx.level_basis(level).first, 0);
    EXPECT_EQ(ctx.level_basis(level).count, ctx.level_basis(level - 1).count + 2);
    EXPECT_LT(std::fabs(std::log2(ctx.rescale_divisor(level)) - 61), 0.5);
    // One prime of the pair below 2^30 (the NTT's lazy path), one above.
    const int count = ctx.level_basis(level).count;
    const u64 a = ctx.q()[static_cast<std::size_t>(count - 2)].value;
    const u64 b = ctx.q()[static_cast<std::size_t>(count - 1)].value;
    EXPECT_LT(std::min(a, b), u64{1} << 30);
    EXPECT_GE(std::max(a, b), u64{1} << 30);
    EXPECT_EQ(ctx.rescale(level).dropped,
              (std::vector<int>{ctx.level_basis(level).count - 2, ctx.level_basis(level).count - 1}));
  }
  EXPECT_EQ(ctx.level_basis(ctx.max_level()).count, ctx.q_count());
  // The chain below is the one without wide levels: the same primes.
  const auto plain = Context::create(small_int32_params(11));
  for (int i = 0; i < plain->q_count(); ++i) {
    EXPECT_EQ(ctx.q()[static_cast<std::size_t>(i)].value, plain->q()[static_cast<std::size_t>(i)].value);
  }

  const RelinKey rk = f.relin_key();
  const int top = ctx.max_level();
  const double wide_scale = ctx.rescale_divisor(top);
  Message expected = f.random_message(1.0);
  Ciphertext x = f.encrypt(expected, top, wide_scale);
  for (int level = top; level > chain_top - 1; --level) {
    SCOPED_TRACE(level);
    const Message m = f.random_message(1.0);
    const Ciphertext y = f.encrypt(m, level, ctx.rescale_divisor(level));
    x = f.engine.multiply_relinearize_rescale(x, y, rk);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] *= m[i];
    EXPECT_EQ(x.state.level, level - 1);
    EXPECT_LT(max_error(expected, f.decrypt(x)), 1e-8);
  }
  // Parameters round-trip with their wide levels.
  std::stringstream params;
  save_parameters(params, ctx);
  const auto loaded = load_context(params);
  EXPECT_EQ(loaded->params().wide_levels, 2);
  EXPECT_EQ(loaded->max_level(), ctx.max_level());
}

// ModRaise from level 0's two primes: every limb of the top level is the
// centered integer of the pair (CRT), and level 0 is unchanged.
TEST(RationalChain, ModRaiseLiftsLevelZerosPairCentered) {
  Fixture f(with_wide_levels(10));
  const Context& ctx = *f.context;
  ASSERT_EQ(ctx.level_basis(0).count, 2);
  const Ciphertext x = f.engine.drop_to_level(f.encrypt(f.random_message(1.0), 1), 0);
  const Ciphertext raised = f.engine.mod_raise(x);
  EXPECT_EQ(raised.state.level, ctx.max_level());
  EXPECT_EQ(f.engine.download(f.engine.drop_to_level(raised, 0)).data, f.engine.download(x).data);
  const HostValue low = f.engine.download(f.engine.to_coefficient(x));
  const HostValue c = f.engine.download(f.engine.to_coefficient(raised));
  const auto a = static_cast<i128>(ctx.level_modulus(0, 0).value);
  const auto b = static_cast<i128>(ctx.level_modulus(0, 1).value);
  const auto a_inverse = static_cast<i128>(inv_mod(static_cast<u64>(a % b), ctx.level_modulus(0, 1)));
  const std::size_t n = ctx.ring_degree();
  for (int comp = 0; comp < 2; ++comp) {
    const u64* ra = low.limb(ctx, comp, 0);
    const u64* rb = low.limb(ctx, comp, 1);
    for (std::size_t k = 0; k < n; ++k) {
      // The integer in [0, ab) with both residues, then centered.
      const i128 t = ((static_cast<i128>(rb[k]) - ra[k]) % b + b) % b * a_inverse % b;
      i128 v = ra[k] + a * t;
      if (v > (a * b - 1) / 2) v -= a * b;
      for (int limb = 0; limb < ctx.q_count(); ++limb) {
        const auto m = static_cast<i128>(ctx.level_modulus(ctx.max_level(), limb).value);
        ASSERT_EQ(c.limb(ctx, comp, limb)[k], static_cast<u64>(((v % m) + m) % m))
            << "component " << comp << " limb " << limb << " coefficient " << k;
      }
    }
  }
}

// The encapsulation's low context is level 0's two primes and two special
// primes (about 122 bits), a chain of level 0 only.
TEST(RationalChain, TheEncapsulationLowContextIsLevelZeroAndTwoSpecialPrimes) {
  const auto ctx = Context::create(with_wide_levels(11));
  const auto low = encapsulation_low_context(*ctx);
  EXPECT_EQ(low->word_size(), WordSize::bits32);
  EXPECT_EQ(low->max_level(), 0);
  ASSERT_EQ(low->q_count(), 2);
  ASSERT_EQ(low->special_count(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(low->level_modulus(0, i).value, ctx->level_modulus(0, i).value);
    EXPECT_EQ(low->p()[static_cast<std::size_t>(i)].value, ctx->p()[static_cast<std::size_t>(i)].value);
  }
  EXPECT_NEAR(low->log_qp(), 122.0, 1.0);
  // One special prime is too few for a level 0 of two.
  CkksParameters one = with_wide_levels(11);
  one.p_bits = {31};
  EXPECT_THROW(encapsulation_low_context(*Context::create(one)), InvalidArgumentError);
}

// round(x A / D) on every coefficient, each kind of rescale: x = y D + r with
// |r| < D / 2 gives y A + round(r A / D), computed here in 128 bits.
TEST(RationalChain, RescaleIsTheRoundedRatioExactly) {
  const auto ctx = Context::create(small_int32_params(10));
  const auto backend = cpu::make_cpu_backend({1});
  const auto prepared = backend->prepare(ctx);
  const std::size_t n = ctx->ring_degree();
  std::mt19937_64 rng(7);
  for (int level = 1; level <= 4; ++level) {  // drops {t0, t1}; 2 mains + t1; 2 mains + t0; {t0, t1}
    SCOPED_TRACE(level);
    const RescaleLevel& rs = ctx->rescale(level);
    i128 d = 1;
    for (int limb : rs.dropped) d *= static_cast<i128>(ctx->level_modulus(level, limb).value);
    i128 a = 1;
    for (std::size_t i = 0; i < rs.source.size(); ++i) {
      if (rs.source[i] < 0) a *= static_cast<i128>(ctx->level_modulus(level - 1, static_cast<int>(i)).value);
    }
    const int in_limbs = ctx->level_basis(level).count;
    const int out_limbs = ctx->level_basis(level - 1).count;
    std::vector<i128> expected(n);
    std::vector<u64> in(static_cast<std::size_t>(in_limbs) * n);
    std::uniform_int_distribution<std::int64_t> small(-1000, 1000);
    for (std::size_t k = 0; k < n; ++k) {
      const i128 y = small(rng);
      // r uniform in (-D/2, D/2): two 64-bit draws reduced.
      const i128 raw = (static_cast<i128>(rng()) << 64 | rng()) & ((static_cast<i128>(1) << 126) - 1);
      const i128 r = raw % d - d / 2;
      const i128 x = y * d + r;
      // nearest(r A / D) = floor((2 r A + D) / 2D), a floor for negatives too.
      const i128 num = 2 * r * a + d;
      const i128 den = 2 * d;
      const i128 q = num >= 0 ? num / den : -((-num + den - 1) / den);
      expected[k] = y * a + q;
      for (int limb = 0; limb < in_limbs; ++limb) {
        const auto m = static_cast<i128>(ctx->level_modulus(level, limb).value);
        in[static_cast<std::size_t>(limb) * n + k] = static_cast<u64>(((x % m) + m) % m);
      }
    }
    const std::size_t word = stored_word_bytes(ctx->word_size());
    auto in_buffer = backend->allocate(in.size() * word);
    const PolyArg coefficients{in_buffer.get(), 1, in_limbs};
    auto ntt_buffer = backend->allocate(in.size() * word);
    auto out_buffer = backend->allocate(static_cast<std::size_t>(out_limbs) * n * word);
    upload_residues(*backend, *coefficients.buffer, in, ctx->word_size());
    const PolyArg ntt{ntt_buffer.get(), 1, in_limbs};
    const PolyArg out{out_buffer.get(), 1, out_limbs};
    backend->to_ntt(*prepared, ntt, coefficients);
    backend->rescale(*prepared, out, ntt);
    backend->to_coefficient(*prepared, out, out);
    std::vector<u64> got(static_cast<std::size_t>(out_limbs) * n);
    download_residues(*backend, *out.buffer, got, ctx->word_size());
    for (int limb = 0; limb < out_limbs; ++limb) {
      const auto m = static_cast<i128>(ctx->level_modulus(level - 1, limb).value);
      for (std::size_t k = 0; k < n; ++k) {
        ASSERT_EQ(got[static_cast<std::size_t>(limb) * n + k], static_cast<u64>(((expected[k] % m) + m) % m))
            << "limb " << limb << " coefficient " << k;
      }
    }
  }
}

// Products, rescales and rotations through every level against the clear
// message, values encoded at the nominal scales.
TEST(RationalChain, EveryLevelMultipliesRescalesAndRotates) {
  Fixture f(small_int32_params(12));
  const auto& ctx = *f.context;
  const RelinKey rk = f.relin_key();
  const GaloisKeys gk = f.galois_keys({1, -3});
  const int top = ctx.max_level();
  Message expected = f.random_message(1.0);
  Ciphertext x = f.encrypt(expected, top, ctx.nominal_scale(top));
  for (int level = top; level > 0; --level) {
    SCOPED_TRACE(level);
    const Message m = f.random_message(1.0);
    const Ciphertext y = f.encrypt(m, level, ctx.nominal_scale(level));
    x = f.engine.multiply_relinearize_rescale(x, y, rk);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] *= m[i];
    EXPECT_EQ(x.state.level, level - 1);
    EXPECT_TRUE(same_scale(x.state.scale, ctx.nominal_scale(level - 1)));
    EXPECT_LT(max_error(expected, f.decrypt(x)), 1e-5);
    EXPECT_LT(max_error(rotate_left(expected, 1), f.decrypt(f.engine.rotate(x, 1, gk))), 1e-5);
    const std::vector<long> steps = {1, -3};
    const auto hoisted = f.engine.rotate_hoisted(x, steps, gk);
    EXPECT_LT(max_error(rotate_left(expected, -3), f.decrypt(hoisted[1])), 1e-5);
  }
}

// Every level to every lower one: limbs dropped where the lower basis is
// part of the higher, a scale-keeping rescale where it has a terminal prime
// the higher lacks; plaintexts cannot gain a prime.
TEST(RationalChain, DropToLevelReachesEveryLowerLevel) {
  Fixture f(small_int32_params(11));
  const auto& ctx = *f.context;
  const Message m = f.random_message(1.0);
  for (int from = ctx.max_level(); from > 0; --from) {
    const Ciphertext x = f.encrypt(m, from, ctx.nominal_scale(from));
    for (int to = from - 1; to >= 0; --to) {
      SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to));
      const Ciphertext y = f.engine.drop_to_level(x, to);
      EXPECT_EQ(y.state.level, to);
      EXPECT_TRUE(same_scale(y.state.scale, x.state.scale));
      EXPECT_LT(max_error(m, f.decrypt(y)), 1e-6);
      const Plaintext p = f.plaintext(m, from, x.state.scale);
      if (ctx.nested(from, to)) {
        EXPECT_EQ(f.engine.drop_to_level(p, to).state.level, to);
      } else {
        EXPECT_THROW(f.engine.drop_to_level(p, to), StateError);
      }
    }
  }
}

// Parameters, a seeded ciphertext at a level with t0 only, and the
// relinearization key round-trip; the loaded context has the same windows.
TEST(RationalChain, ParametersValuesAndKeysRoundTrip) {
  Fixture f(small_int32_params(11));
  const Context& ctx = *f.context;
  std::stringstream params;
  save_parameters(params, ctx);
  const auto loaded = load_context(params);
  EXPECT_EQ(loaded->word_size(), WordSize::bits32);
  ASSERT_EQ(loaded->max_level(), ctx.max_level());
  for (int level = 0; level <= ctx.max_level(); ++level) {
    EXPECT_EQ(loaded->level_basis(level).first, ctx.level_basis(level).first);
    EXPECT_EQ(loaded->level_basis(level).count, ctx.level_basis(level).count);
    if (level > 0) {
      EXPECT_EQ(loaded->rescale_divisor(level), ctx.rescale_divisor(level));
    }
  }
  const Message m = f.random_message(1.0);
  const int level = 5;
  const auto seeded = f.encryptor.encrypt_symmetric_seeded(f.encoder.encode(m, level, ctx.nominal_scale(level)), f.sk);
  std::stringstream bytes;
  save_ciphertext(bytes, ctx, seeded);
  const HostValue back = load_ciphertext(bytes, ctx);
  EXPECT_EQ(back.data, seeded.value.data);
  // Straight into the backend's 4-byte words, and back out.
  std::stringstream again;
  save_ciphertext(again, ctx, seeded);
  EXPECT_EQ(f.engine.download(load_ciphertext(again, f.engine)).data, seeded.value.data);
  std::stringstream key_bytes;
  save_relinearization_key(key_bytes, ctx, f.keygen.relinearization_key(f.sk));
  const RelinKey rk = load_relinearization_key(key_bytes, f.engine);
  const Ciphertext x = f.engine.upload_ciphertext(back);
  EXPECT_LT(max_error(m, f.decrypt(x)), 1e-6);
  const Ciphertext square = f.engine.multiply_relinearize_rescale(x, x, rk);
  Message expected = m;
  for (auto& v : expected) v *= v;
  EXPECT_LT(max_error(expected, f.decrypt(square)), 1e-5);
}

}  // namespace
}  // namespace fhelium::test
