// The CKKS encoder: round trips, the canonical embedding on known
// polynomials, and exact rounding into residues.
#include "fhelium/encoder.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <numbers>

#include "fhelium/error.hpp"
#include "helpers.hpp"

namespace fhelium::test {
namespace {

constexpr double tolerance = 1e-6;

class EncoderTest : public testing::Test {
 protected:
  EncoderTest() : context(Context::create(small_params(12, 3))), encoder(context) {}

  Message random_message(std::size_t count, double amplitude = 1.0) {
    std::uniform_real_distribution<double> d(-amplitude, amplitude);
    Message m(count);
    for (auto& x : m) x = {d(rng), d(rng)};
    return m;
  }
  std::size_t slots() const { return context->ring_degree() / 2; }

  std::shared_ptr<const Context> context;
  Encoder encoder;
  std::mt19937_64 rng{99};
};

TEST_F(EncoderTest, ComplexRoundTripAtLevelsScalesAndDomains) {
  const Message m = random_message(slots());
  for (int level = 0; level <= context->max_level(); ++level) {
    for (int log_scale : {30, 40, 50}) {
      for (Domain domain : {Domain::ntt, Domain::coefficient}) {
        const auto pt = encoder.encode(m, level, std::ldexp(1.0, log_scale), domain);
        EXPECT_EQ(pt.state.level, level);
        EXPECT_EQ(pt.state.domain, domain);
        EXPECT_EQ(pt.state.components, 1);
        EXPECT_EQ(pt.data.size(), static_cast<std::size_t>(level + 1) * context->ring_degree());
        const auto decoded = encoder.decode(pt);
        ASSERT_EQ(decoded.size(), slots());
        EXPECT_LT(max_error(m, decoded), tolerance)
            << "level " << level << ", scale 2^" << log_scale << ", " << to_string(domain);
      }
    }
  }
}

TEST_F(EncoderTest, RealRoundTrip) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> values(slots());
  for (auto& x : values) x = d(rng);
  const auto decoded = encoder.decode(encoder.encode(values, context->max_level(), std::ldexp(1.0, 40)));
  Message expected(values.begin(), values.end());
  EXPECT_LT(max_error(expected, decoded), tolerance);
  for (const auto& z : decoded) EXPECT_LT(std::abs(z.imag()), tolerance);
}

TEST_F(EncoderTest, SparseSlotCountsRoundTripAndRepeat) {
  for (std::size_t count : {std::size_t{1}, std::size_t{4}, std::size_t{256}, slots() / 2}) {
    const Message m = random_message(count);
    const auto pt = encoder.encode(m, 1, std::ldexp(1.0, 40));
    EXPECT_LT(max_error(m, encoder.decode(pt, count)), tolerance) << count;
    // The sparse message repeats across all N/2 slots.
    Message repeated(slots());
    for (std::size_t i = 0; i < slots(); ++i) repeated[i] = m[i % count];
    EXPECT_LT(max_error(repeated, encoder.decode(pt)), tolerance) << count;
  }
}

TEST_F(EncoderTest, ShortMessagePadsWithZeros) {
  const Message m = random_message(3);  // rounded up to 4 slots
  const auto decoded = encoder.decode(encoder.encode(m, 0, std::ldexp(1.0, 40)), 4);
  const Message expected = {m[0], m[1], m[2], 0.0};
  EXPECT_LT(max_error(expected, decoded), tolerance);
}

TEST_F(EncoderTest, MonomialXDecodesToRotationGroupPowersOfZeta) {
  // m(X) = X decodes slot j to zeta^(5^j mod 2N), zeta = exp(i pi / N).
  const Context& ctx = *context;
  const std::uint64_t n = ctx.ring_degree();
  for (int level : {0, ctx.max_level()}) {
    HostValue pt;
    pt.state = {ctx.id(), ctx.word_size(), level, 1.0, Domain::coefficient, Basis::Q, 1};
    pt.data.assign(pt.state.words(ctx), 0);
    for (int limb = 0; limb <= level; ++limb) pt.limb(ctx, 0, limb)[1] = 1;
    const auto decoded = encoder.decode(pt);
    ASSERT_EQ(decoded.size(), n / 2);
    std::uint64_t power = 1;  // 5^j mod 2N
    for (std::size_t j = 0; j < n / 2; ++j) {
      const double angle = std::numbers::pi * static_cast<double>(power) / static_cast<double>(n);
      const std::complex<double> expected(std::cos(angle), std::sin(angle));
      ASSERT_LT(std::abs(decoded[j] - expected), 1e-9) << "slot " << j;
      power = power * 5 % (2 * n);
    }
  }
}

TEST_F(EncoderTest, NegativeCoefficientsDecodeCentered) {
  // m(X) = -3 - 2 X^(N/2): every slot is -3 - 2i (X^(N/2) evaluates to +-i; at
  // zeta^(5^j) it is i^(5^j) = i since 5^j = 1 mod 4).
  const Context& ctx = *context;
  const std::uint64_t n = ctx.ring_degree();
  HostValue pt;
  pt.state = {ctx.id(), ctx.word_size(), 2, 1.0, Domain::coefficient, Basis::Q, 1};
  pt.data.assign(pt.state.words(ctx), 0);
  for (int limb = 0; limb <= 2; ++limb) {
    const u64 q = ctx.q()[static_cast<std::size_t>(limb)].value;
    pt.limb(ctx, 0, limb)[0] = q - 3;
    pt.limb(ctx, 0, limb)[n / 2] = q - 2;
  }
  const auto decoded = encoder.decode(pt);
  for (const auto& z : decoded) ASSERT_LT(std::abs(z - std::complex<double>(-3, -2)), 1e-9);
}

TEST_F(EncoderTest, ConstantIsTheConstantPolynomial) {
  const double scale = std::ldexp(1.0, 40);
  const auto pt = encoder.encode_constant(-0.75, 1, scale, Domain::coefficient);
  const Context& ctx = *context;
  for (int limb = 0; limb <= 1; ++limb) {
    const u64 q = ctx.q()[static_cast<std::size_t>(limb)].value;
    const u64* c = pt.limb(ctx, 0, limb);
    EXPECT_EQ(c[0], q - (u64{3} << 38));
    for (std::size_t k = 1; k < ctx.ring_degree(); ++k) ASSERT_EQ(c[k], 0u) << k;
  }
  for (const auto& z : encoder.decode(encoder.encode_constant(-0.75, 1, scale)))
    ASSERT_LT(std::abs(z - std::complex<double>(-0.75, 0)), tolerance);
}

// Independent reference: 2^e mod q.
u64 pow2_mod(unsigned e, u64 q) {
  u64 r = 1;
  for (unsigned i = 0; i < e; ++i) r = static_cast<u64>((static_cast<u128>(r) * 2) % q);
  return r;
}

TEST(EncoderRoundingTest, RoundToResidueIsExact) {
  const u64 q = 1152921504606584833ULL;  // a 60-bit NTT prime
  const Modulus m(q);
  EXPECT_EQ(Encoder::round_to_residue(0.0, m), 0u);
  EXPECT_EQ(Encoder::round_to_residue(-0.0, m), 0u);
  EXPECT_EQ(Encoder::round_to_residue(0.49, m), 0u);
  EXPECT_EQ(Encoder::round_to_residue(2.5, m), 3u);
  EXPECT_EQ(Encoder::round_to_residue(-2.5, m), q - 3);
  EXPECT_EQ(Encoder::round_to_residue(-1.0, m), q - 1);
  EXPECT_EQ(Encoder::round_to_residue(std::ldexp(1.0, 60), m), pow2_mod(60, q));
  EXPECT_EQ(Encoder::round_to_residue(-std::ldexp(1.0, 62), m), q - pow2_mod(62, q));
  const double big = std::ldexp(1.0, 70) + std::ldexp(1.0, 20);
  const u64 expected = (pow2_mod(70, q) + pow2_mod(20, q)) % q;
  EXPECT_EQ(Encoder::round_to_residue(big, m), expected);
  EXPECT_EQ(Encoder::round_to_residue(-big, m), q - expected);
  // Pinned with python3: int(x) % q.
  EXPECT_EQ(expected, 269483008u);
  EXPECT_EQ(Encoder::round_to_residue(std::ldexp(1.0, 64), m), 4194288u);
  EXPECT_EQ(Encoder::round_to_residue(std::ldexp(1.0, 63) - 1024.0, m), 2096120u);
  EXPECT_EQ(Encoder::round_to_residue(std::ldexp(1.0, 63), m), pow2_mod(63, q));
  EXPECT_EQ(Encoder::round_to_residue(std::ldexp(1.0, 100) - std::ldexp(1.0, 47), m), 288088539151728640u);
  EXPECT_EQ(Encoder::round_to_residue(1e300, m), 653172654380407247u);
  EXPECT_EQ(Encoder::round_to_residue(DBL_MAX, m), 920036861334925174u);
  EXPECT_EQ(Encoder::round_to_residue(-DBL_MAX, m), q - 920036861334925174u);
  EXPECT_EQ(Encoder::round_to_residue(123456789012.0, Modulus(786433)), 177373u);
}

TEST(EncoderRoundingTest, NonFiniteThrows) {
  const Modulus m(786433);
  EXPECT_THROW(Encoder::round_to_residue(std::numeric_limits<double>::quiet_NaN(), m), InvalidArgumentError);
  EXPECT_THROW(Encoder::round_to_residue(std::numeric_limits<double>::infinity(), m), InvalidArgumentError);
  EXPECT_THROW(Encoder::round_to_residue(-std::numeric_limits<double>::infinity(), m), InvalidArgumentError);
}

TEST_F(EncoderTest, InvalidInputsThrow) {
  const Message too_long(slots() + 1, {0.5, 0.5});
  EXPECT_THROW(encoder.encode(too_long, 0, 1e6), InvalidArgumentError);
  Message m = random_message(8);
  m[3] = {std::numeric_limits<double>::quiet_NaN(), 0.0};
  EXPECT_THROW(encoder.encode(m, 0, 1e6), InvalidArgumentError);
  m[3] = {0.0, std::numeric_limits<double>::infinity()};
  EXPECT_THROW(encoder.encode(m, 0, 1e6), InvalidArgumentError);
  const std::vector<double> real = {1.0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_THROW(encoder.encode(real, 0, 1e6), InvalidArgumentError);
  const auto pt = encoder.encode(random_message(4), 0, 1e6);
  EXPECT_THROW(encoder.decode(pt, 3), InvalidArgumentError);
  EXPECT_THROW(encoder.decode(pt, slots() * 2), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::test
