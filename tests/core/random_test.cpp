// The CSPRNG and the ternary, sparse ternary and Gaussian samplers.
#include "fhelium/random.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "helpers.hpp"

namespace fhelium::test {
namespace {

std::vector<std::uint64_t> stream(Csprng& rng, std::size_t count) {
  std::vector<std::uint64_t> out(count);
  for (auto& x : out) x = rng.next_u64();
  return out;
}

TEST(CsprngTest, SameSeedSameStream) {
  Csprng a(test_seed(3)), b(test_seed(3));
  // Longer than one internal block, mixing fill sizes.
  EXPECT_EQ(stream(a, 2000), stream(b, 2000));
  std::vector<std::uint8_t> x(777), y(777);
  a.fill(x.data(), x.size());
  for (std::size_t i = 0; i < y.size(); i += 7) b.fill(y.data() + i, 7);
  EXPECT_EQ(x, y);
}

TEST(CsprngTest, DifferentSeedsDiffer) {
  Csprng a(test_seed(3)), b(test_seed(4));
  Seed one_bit = test_seed(3);
  one_bit[31] ^= 1;
  Csprng c(one_bit);
  const auto sa = stream(a, 64);
  EXPECT_NE(sa, stream(b, 64));
  EXPECT_NE(sa, stream(c, 64));
}

TEST(CsprngTest, OsSeededGeneratorsDiffer) {
  Csprng a, b;
  EXPECT_NE(stream(a, 8), stream(b, 8));
  EXPECT_NE(Csprng::os_seed(), Csprng::os_seed());
}

TEST(CsprngTest, StreamLooksBalanced) {
  // 64k words: each bit is set about half the time.
  Csprng rng(test_seed(5));
  std::array<int, 64> ones{};
  const int count = 1 << 16;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t x = rng.next_u64();
    for (int b = 0; b < 64; ++b) ones[static_cast<std::size_t>(b)] += static_cast<int>((x >> b) & 1);
  }
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(ones[static_cast<std::size_t>(b)], count / 2, 1200) << "bit " << b;  // ~9 sigma
  }
}

TEST(RandomTest, UniformStaysBelowBoundAndCoversIt) {
  Csprng rng(test_seed(6));
  for (std::uint64_t bound : {1ULL, 2ULL, 3ULL, 7ULL, 1000ULL, (1ULL << 63) + 1, ~0ULL}) {
    for (int i = 0; i < 2000; ++i) ASSERT_LT(rng.uniform(bound), bound) << bound;
  }
  std::array<int, 7> hits{};
  for (int i = 0; i < 7000; ++i) ++hits[static_cast<std::size_t>(rng.uniform(7))];
  for (int h : hits) EXPECT_NEAR(h, 1000, 150);
  // The top half of [0, 2^63 + 1) is reached.
  int high = 0;
  for (int i = 0; i < 1000; ++i) high += rng.uniform((1ULL << 63) + 1) >= (1ULL << 62) ? 1 : 0;
  EXPECT_NEAR(high, 500, 100);
}

TEST(RandomTest, UniformOpen01) {
  Csprng rng(test_seed(7));
  double sum = 0;
  const int count = 100000;
  for (int i = 0; i < count; ++i) {
    const double u = rng.uniform_open01();
    ASSERT_GT(u, 0.0);
    ASSERT_LE(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / count, 0.5, 0.01);
}

TEST(RandomTest, TernaryIsUniformOverMinusOneZeroOne) {
  Csprng rng(test_seed(8));
  const std::size_t n = 90000;
  const auto s = sample_ternary(rng, n);
  ASSERT_EQ(s.size(), n);
  std::array<int, 3> counts{};
  for (std::int8_t x : s) {
    ASSERT_TRUE(x == -1 || x == 0 || x == 1) << static_cast<int>(x);
    ++counts[static_cast<std::size_t>(x + 1)];
  }
  for (int c : counts) EXPECT_NEAR(c, 30000, 1500);
  EXPECT_NE(s, sample_ternary(rng, n));
}

TEST(RandomTest, SparseTernaryHasExactHammingWeight) {
  Csprng rng(test_seed(9));
  for (int weight : {0, 1, 64, 192, 4096}) {
    const auto s = sample_sparse_ternary(rng, 4096, weight);
    ASSERT_EQ(s.size(), 4096u);
    int nonzero = 0, plus = 0;
    for (std::int8_t x : s) {
      ASSERT_TRUE(x == -1 || x == 0 || x == 1) << static_cast<int>(x);
      nonzero += x != 0;
      plus += x == 1;
    }
    EXPECT_EQ(nonzero, weight);
    if (weight == 4096) {
      EXPECT_NEAR(plus, 2048, 250);
    }
  }
}

TEST(RandomTest, GaussianIsBoundedWithTheRightSpread) {
  Csprng rng(test_seed(10));
  const std::size_t n = 100000;
  const auto s = sample_gaussian(rng, n, error_stddev);
  ASSERT_EQ(s.size(), n);
  double sum = 0, sum_sq = 0;
  for (std::int64_t x : s) {
    ASSERT_LE(std::abs(static_cast<double>(x)), 6 * error_stddev) << x;
    sum += static_cast<double>(x);
    sum_sq += static_cast<double>(x) * static_cast<double>(x);
  }
  const double mean = sum / static_cast<double>(n);
  const double stddev = std::sqrt(sum_sq / static_cast<double>(n) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(stddev, error_stddev, 0.1 * error_stddev);
  // Not all identical, and both signs occur.
  EXPECT_NE(*std::min_element(s.begin(), s.end()), *std::max_element(s.begin(), s.end()));
  EXPECT_LT(*std::min_element(s.begin(), s.end()), -5);
  EXPECT_GT(*std::max_element(s.begin(), s.end()), 5);
}

TEST(RandomTest, SamplersAreReproducibleFromTheSeed) {
  Csprng a(test_seed(11)), b(test_seed(11));
  EXPECT_EQ(sample_ternary(a, 1000), sample_ternary(b, 1000));
  EXPECT_EQ(sample_sparse_ternary(a, 1000, 64), sample_sparse_ternary(b, 1000, 64));
  EXPECT_EQ(sample_gaussian(a, 1000, error_stddev), sample_gaussian(b, 1000, error_stddev));
}

}  // namespace
}  // namespace fhelium::test

namespace fhelium::test {
namespace {

TEST(RandomTest, BadArgumentsAreRefused) {
  Csprng rng(Seed{});
  EXPECT_THROW(rng.uniform(0), InvalidArgumentError);
  EXPECT_THROW(sample_sparse_ternary(rng, 16, 17), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::test

namespace fhelium::test {
namespace {

TEST(RandomTest, FillUniformStaysBelowBoundAndCoversTheRange) {
  Csprng rng(test_seed(3));
  for (std::uint64_t bound : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{1000},
                              (std::uint64_t{1} << 60) + 33}) {
    std::vector<std::uint64_t> out(4096);
    rng.fill_uniform(out, bound);
    std::uint64_t largest = 0;
    for (auto x : out) {
      ASSERT_LT(x, bound);
      largest = std::max(largest, x);
    }
    if (bound > 1) {
      EXPECT_GE(largest, bound / 2) << "bound " << bound;  // reaches the upper half
    }
  }
  std::vector<std::uint64_t> none(1);
  EXPECT_THROW(rng.fill_uniform(none, 0), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::test
