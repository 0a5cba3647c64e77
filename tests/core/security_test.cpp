// The HE security table, the presets and the security check in Context.
#include "fhelium/security.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "fhelium/context.hpp"
#include "fhelium/error.hpp"
#include "fhelium/params.hpp"

namespace fhelium::test {
namespace {

using testing::HasSubstr;

// Values from core/data/he-security-table-2025.json (the 2025 HE security table).
TEST(SecurityTest, MaxLogQpKnownAnswers) {
  const auto ternary = SecretDistribution::ternary;
  EXPECT_EQ(max_log_qp(ternary, 128, 1 << 10), 26);
  EXPECT_EQ(max_log_qp(ternary, 128, 1 << 14), 430);
  EXPECT_EQ(max_log_qp(ternary, 128, 1 << 15), 868);
  EXPECT_EQ(max_log_qp(ternary, 128, 1 << 16), 1747);
  EXPECT_EQ(max_log_qp(ternary, 128, 1 << 17), 3523);
  EXPECT_EQ(max_log_qp(ternary, 192, 1 << 14), 297);
  EXPECT_EQ(max_log_qp(ternary, 192, 1 << 17), 2411);
  EXPECT_EQ(max_log_qp(ternary, 256, 1 << 15), 462);
  EXPECT_EQ(max_log_qp(ternary, 256, 1 << 11), 27);
  EXPECT_EQ(max_log_qp(SecretDistribution::gaussian, 128, 1 << 14), 432);
  EXPECT_EQ(max_log_qp(SecretDistribution::gaussian, 256, 1 << 16), 931);
}

TEST(SecurityTest, MaxLogQpMissingEntries) {
  EXPECT_FALSE(max_log_qp(SecretDistribution::ternary, 192, 1 << 10).has_value());
  EXPECT_FALSE(max_log_qp(SecretDistribution::ternary, 128, 1 << 18).has_value());
  EXPECT_FALSE(max_log_qp(SecretDistribution::ternary, 100, 1 << 14).has_value());
  EXPECT_FALSE(max_log_qp(SecretDistribution::ternary, 128, 3000).has_value());
}

TEST(SecurityTest, CheckSecurity) {
  EXPECT_NO_THROW(check_security(SecretDistribution::ternary, 128, 1 << 14, 430.0));
  EXPECT_THROW(check_security(SecretDistribution::ternary, 128, 1 << 14, 430.5), SecurityError);
  EXPECT_THROW(check_security(SecretDistribution::ternary, 192, 1 << 10, 10.0), SecurityError);
  EXPECT_NO_THROW(check_security(SecretDistribution::gaussian, 128, 1 << 14, 432.0));
}

// A value just over the budget never prints as the budget itself.
TEST(SecurityTest, RefusalShowsTheDigitsThatExceedTheBudget) {
  try {
    check_security(SecretDistribution::ternary, 128, 1 << 14, 430.0004);
    FAIL() << "expected SecurityError";
  } catch (const SecurityError& e) {
    EXPECT_THAT(e.what(), HasSubstr("log2(QP) = 430.0004 exceeds the maximum 430"));
  }
}

// The table covers uniform secrets only: a sparse one is refused even where
// the modulus fits the dense budget, and builds only with the explicit opt-out.
TEST(SecurityTest, ASparseSecretIsOutsideTheTable) {
  CkksParameters p = preset("slots8192_scale40_levels7");
  p.hamming_weight = 32;
  try {
    Context::create(p);
    FAIL() << "expected SecurityError";
  } catch (const SecurityError& e) {
    EXPECT_THAT(e.what(), HasSubstr("hamming_weight 32"));
    EXPECT_THAT(e.what(), HasSubstr("uniform secrets only"));
  }
  p.allow_insecure = true;
  EXPECT_NO_THROW(Context::create(p));
}

TEST(SecurityTest, EveryPresetBuildsWithinItsBudget) {
  const auto names = preset_names();
  EXPECT_EQ(names.size(), 14u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const CkksParameters params = preset(name);
    EXPECT_FALSE(params.allow_insecure);
    const auto context = Context::create(params);
    const auto budget = max_log_qp(params.secret, params.security_bits, context->ring_degree());
    ASSERT_TRUE(budget.has_value());
    EXPECT_LE(context->log_qp(), *budget);
    EXPECT_EQ(context->q_count(), static_cast<int>(params.q_bits.size()));
    EXPECT_EQ(context->max_level(), params.max_level());
    EXPECT_EQ(context->special_count(), static_cast<int>(params.p_bits.size()));
    // "slots<S>_scale<B>_levels<L>", or "..._levels<L>_bootstrap" with L the
    // levels left after a bootstrap (the default one consumes 16), then
    // "_int32" for the 32-bit word family.
    const bool bootstrap = name.find("_bootstrap") != std::string::npos;
    const std::string suffix =
        std::string(bootstrap ? "_bootstrap" : "") + (params.word_size == WordSize::bits32 ? "_int32" : "");
    const std::string expected = "slots" + std::to_string(params.max_slots()) + "_scale" +
                                 std::to_string(std::lround(std::log2(params.scale))) + "_levels" +
                                 std::to_string(params.max_level() - (bootstrap ? 16 : 0)) + suffix;
    EXPECT_EQ(name, expected);
  }
}

TEST(SecurityTest, PresetShapes) {
  const auto p = preset("slots8192_scale40_levels7");
  EXPECT_EQ(p.ring_degree(), 1u << 14);
  EXPECT_EQ(p.q_bits, (std::vector<int>{60, 40, 40, 40, 40, 40, 40, 40}));
  EXPECT_EQ(p.p_bits, (std::vector<int>{60}));
  EXPECT_EQ(p.scale, std::ldexp(1.0, 40));

  const auto big = preset("slots32768_scale40_levels34");
  EXPECT_EQ(big.ring_degree(), 1u << 16);
  EXPECT_EQ(big.q_bits.size(), 35u);
  EXPECT_EQ(big.p_bits.size(), 4u);
}

TEST(SecurityTest, InsecureParametersThrowWithNumbers) {
  CkksParameters p;
  p.log_ring_degree = 14;
  p.q_bits.assign(12, 40);
  p.p_bits = {40};
  p.scale = std::ldexp(1.0, 40);
  try {
    Context::create(p);
    FAIL() << "expected SecurityError";
  } catch (const SecurityError& e) {
    p.allow_insecure = true;
    const auto context = Context::create(p);
    EXPECT_GT(context->log_qp(), 430);
    char log_qp[32];
    std::snprintf(log_qp, sizeof(log_qp), "%.1f", context->log_qp());
    EXPECT_THAT(e.what(), HasSubstr(log_qp));
    EXPECT_THAT(e.what(), HasSubstr("430"));
  }
}

TEST(SecurityTest, HigherSecurityLevelTightensTheBudget) {
  auto p = preset("slots8192_scale40_levels7");  // about 400 bits: fine at 128, not at 192
  EXPECT_NO_THROW(Context::create(p));
  p.security_bits = 192;
  EXPECT_THROW(Context::create(p), SecurityError);
  p.allow_insecure = true;
  EXPECT_NO_THROW(Context::create(p));
}

TEST(SecurityTest, UnknownPresetNamesIt) {
  try {
    preset("slots1_scale2_levels3");
    FAIL() << "expected ParameterError";
  } catch (const ParameterError& e) {
    EXPECT_THAT(e.what(), HasSubstr("slots1_scale2_levels3"));
  }
}

TEST(SecurityTest, BadRingDegreeThrows) {
  for (int log_n : {9, 18}) {
    auto p = preset("slots8192_scale40_levels7");
    p.log_ring_degree = log_n;
    p.allow_insecure = true;
    EXPECT_THROW(Context::create(p), ParameterError) << log_n;
  }
}

TEST(SecurityTest, ContextPrimesAreDistinctAcrossQAndP) {
  for (const auto& name : {"slots8192_scale40_levels7", "slots16384_scale50_levels13"}) {
    const auto context = Context::create(preset(name));
    std::set<u64> primes;
    for (int limb = 0; limb < context->key_limbs(); ++limb) primes.insert(context->key_modulus(limb).value);
    EXPECT_EQ(primes.size(), static_cast<std::size_t>(context->key_limbs())) << name;
    for (u64 q : primes) EXPECT_EQ(q % (2 * context->ring_degree()), 1u) << name;
  }
}

}  // namespace
}  // namespace fhelium::test
