// BasisConverter: the centered lift, checked against 128-bit integers.
#include "fhelium/backend/rns.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"

namespace fhelium::test {
namespace {

struct RnsCase {
  std::string name;
  std::vector<int> from_bits;  // product must stay below 2^128
  std::vector<int> to_bits;
};

std::vector<Modulus> moduli(const std::vector<u64>& primes) { return {primes.begin(), primes.end()}; }

// [x']_b with x' the representative of x in (-A/2, A/2].
u64 centered_mod(u128 x, u128 a, u64 b) {
  if (x <= a / 2) return static_cast<u64>(x % b);
  const auto r = static_cast<u64>((a - x) % b);
  return r == 0 ? 0 : b - r;
}

void PrintTo(const RnsCase& c, std::ostream* os) { *os << c.name; }

std::string rns_name(const testing::TestParamInfo<RnsCase>& info) { return info.param.name; }

class RnsTest : public testing::TestWithParam<RnsCase> {
 protected:
  void SetUp() override {
    const std::uint64_t n = 1024;
    const auto from_primes = generate_ntt_primes(GetParam().from_bits, n);
    const auto to_primes =
        generate_ntt_primes(GetParam().to_bits, n, std::set<u64>(from_primes.begin(), from_primes.end()));
    converter = std::make_unique<BasisConverter>(moduli(from_primes), moduli(to_primes));
    product = 1;
    for (u64 a : from_primes) product *= a;
  }

  // Converts the given values (one per coefficient) and checks each output.
  void check(const std::vector<u128>& xs) {
    const auto& from = converter->from();
    const auto& to = converter->to();
    const std::size_t n = xs.size();
    std::vector<u64> in(from.size() * n), out(to.size() * n, ~u64{0});
    for (std::size_t i = 0; i < from.size(); ++i) {
      for (std::size_t k = 0; k < n; ++k) in[i * n + k] = static_cast<u64>(xs[k] % from[i].value);
    }
    converter->convert(in.data(), out.data(), n, 0, n);
    // The portable path: the same residues as the vectorized one.
    std::vector<u64> portable(to.size() * n, ~u64{0});
    converter->convert_scalar(in.data(), portable.data(), n, 0, n);
    ASSERT_EQ(portable, out) << "convert_scalar";
    for (std::size_t j = 0; j < to.size(); ++j) {
      for (std::size_t k = 0; k < n; ++k) {
        const u128 x = xs[k];
        ASSERT_EQ(out[j * n + k], centered_mod(x, product, to[j].value))
            << "x = " << static_cast<u64>(x >> 64) << " * 2^64 + " << static_cast<u64>(x) << ", coefficient " << k
            << ", output prime " << to[j].value;
      }
      // One target at a time (the fused key switch): the same residues.
      std::vector<u64> one(n, ~u64{0});
      converter->convert_one(in.data(), one.data(), n, j, 0, n);
      ASSERT_TRUE(std::equal(one.begin(), one.end(), out.begin() + static_cast<std::ptrdiff_t>(j * n)))
          << "convert_one, output prime " << to[j].value;
    }
  }

  std::unique_ptr<BasisConverter> converter;
  u128 product = 0;
};

TEST_P(RnsTest, RandomValues) {
  std::mt19937_64 rng(7);
  std::vector<u128> xs(4096);
  for (auto& x : xs) x = ((static_cast<u128>(rng()) << 64) | rng()) % product;
  check(xs);
}

TEST_P(RnsTest, SmallMagnitudesOfBothSigns) {
  std::vector<u128> xs;
  for (u128 d = 0; d < 1000; ++d) {
    xs.push_back(d);
    xs.push_back(product - 1 - d);
  }
  check(xs);
}

TEST_P(RnsTest, EdgeValues) {
  const u128 a = product;
  // Just outside the documented window (about |A| 2^-52 A) around A/2.
  const u128 margin = std::max<u128>(a >> 46, 2);
  check({0, 1, 2, a - 1, a - 2, a / 3, 2 * (a / 3), a / 4, a - a / 4, a / 2 - margin, a / 2 + 1 + margin});
}

TEST_P(RnsTest, BoundaryPicksOneRepresentativeForAllOutputs) {
  // Within the window around A/2 the lift may be x or x - A, but it is the
  // same representative for every output prime.
  const auto& from = converter->from();
  const auto& to = converter->to();
  const u128 a = product;
  std::vector<u128> xs;
  for (u128 d = 0; d < 64; ++d) {
    xs.push_back(a / 2 - d);
    xs.push_back(a / 2 + 1 + d);
  }
  const std::size_t n = xs.size();
  std::vector<u64> in(from.size() * n), out(to.size() * n);
  for (std::size_t i = 0; i < from.size(); ++i) {
    for (std::size_t k = 0; k < n; ++k) in[i * n + k] = static_cast<u64>(xs[k] % from[i].value);
  }
  converter->convert(in.data(), out.data(), n, 0, n);
  for (std::size_t k = 0; k < n; ++k) {
    bool all_positive = true, all_negative = true;  // x itself, or x - A
    for (std::size_t j = 0; j < to.size(); ++j) {
      const u64 b = to[j].value;
      const auto positive = static_cast<u64>(xs[k] % b);
      const auto r = static_cast<u64>((a - xs[k]) % b);
      const u64 negative = r == 0 ? 0 : b - r;
      all_positive = all_positive && out[j * n + k] == positive;
      all_negative = all_negative && out[j * n + k] == negative;
    }
    EXPECT_TRUE(all_positive || all_negative) << "coefficient " << k;
  }
}

TEST_P(RnsTest, ConvertsOnlyTheRequestedRange) {
  const std::size_t n = 8;
  const auto& from = converter->from();
  const auto& to = converter->to();
  std::vector<u64> in(from.size() * n, 5), out(to.size() * n, 12345);
  converter->convert(in.data(), out.data(), n, 2, 5);
  for (std::size_t j = 0; j < to.size(); ++j) {
    for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(out[j * n + k], k >= 2 && k < 5 ? 5u : 12345u) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(
    RnsBases, RnsTest,
    testing::Values(RnsCase{"one60_to_three", {60}, {60, 40, 30}}, RnsCase{"one40_to_two", {40}, {60, 50}},
                    RnsCase{"two40_to_three", {40, 40}, {40, 60, 61}}, RnsCase{"two60_to_two", {60, 60}, {60, 50}},
                    RnsCase{"three40_to_two", {40, 40, 40}, {60, 40}}, RnsCase{"mixed_to_one", {61, 30, 35}, {55}},
                    // Primes below 2^31: the narrow path (32-bit products, folds).
                    RnsCase{"narrow_two31_to_three", {31, 31}, {31, 30, 20}},
                    RnsCase{"narrow_two20_to_two", {21, 20}, {31, 30}},
                    RnsCase{"narrow_four_to_two", {31, 31, 30, 30}, {31, 20}},
                    RnsCase{"narrow_three_to_one", {30, 30, 31}, {31}}),
    rns_name);

TEST(RnsConverterTest, RejectsEmptyFromBasis) {
  EXPECT_THROW(BasisConverter({}, {Modulus(generate_ntt_primes({40}, 1024)[0])}), ParameterError);
}

}  // namespace
}  // namespace fhelium::test
