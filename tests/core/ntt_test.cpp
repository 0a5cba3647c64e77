// Negacyclic NTT: round trip, products against schoolbook, known answers.
#include "fhelium/backend/ntt.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "fhelium/primes.hpp"

namespace fhelium::test {
namespace {

struct NttShape {
  int log_n;
  int bits;
};

void PrintTo(const NttShape& s, std::ostream* os) { *os << "N = 2^" << s.log_n << ", " << s.bits << "-bit q"; }

std::string ntt_name(const testing::TestParamInfo<NttShape>& info) {
  return "N" + std::to_string(1 << info.param.log_n) + "_q" + std::to_string(info.param.bits);
}

// Independent reference arithmetic (plain 128-bit remainders).
u64 mulmod(u64 a, u64 b, u64 q) { return static_cast<u64>(static_cast<u128>(a) * b % q); }

u64 powmod(u64 base, u64 e, u64 q) {
  u64 r = 1;
  for (base %= q; e != 0; e >>= 1) {
    if (e & 1) r = mulmod(r, base, q);
    base = mulmod(base, base, q);
  }
  return r;
}

std::vector<u64> random_poly(std::size_t n, u64 q, std::mt19937_64& rng) {
  std::uniform_int_distribution<u64> d(0, q - 1);
  std::vector<u64> a(n);
  for (auto& x : a) x = d(rng);
  return a;
}

// c = a * b mod (X^N + 1, q), O(N^2).
std::vector<u64> schoolbook_negacyclic(const std::vector<u64>& a, const std::vector<u64>& b, u64 q) {
  const std::size_t n = a.size();
  std::vector<u64> c(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const u64 p = mulmod(a[i], b[j], q);
      const std::size_t k = i + j;
      if (k < n) {
        c[k] = c[k] + p >= q ? c[k] + p - q : c[k] + p;
      } else {
        c[k - n] = c[k - n] >= p ? c[k - n] - p : c[k - n] + q - p;
      }
    }
  }
  return c;
}

class NttTest : public testing::TestWithParam<NttShape> {
 protected:
  void SetUp() override {
    n = std::uint64_t{1} << GetParam().log_n;
    q = generate_ntt_primes({GetParam().bits}, n)[0];
    table = std::make_unique<NttTable>(n, Modulus(q));
  }
  std::uint64_t n = 0;
  u64 q = 0;
  std::unique_ptr<NttTable> table;
  std::mt19937_64 rng{static_cast<std::uint64_t>(GetParam().log_n * 100 + GetParam().bits)};
};

TEST_P(NttTest, TableShape) {
  EXPECT_EQ(table->ring_degree(), n);
  EXPECT_EQ(table->modulus().value, q);
  // psi is a primitive 2N-th root of unity.
  EXPECT_EQ(powmod(table->psi(), n, q), q - 1);
  EXPECT_EQ(powmod(table->psi(), 2 * n, q), 1u);
  EXPECT_EQ(mulmod(table->inverse_n(), n % q, q), 1u);
}

TEST_P(NttTest, ForwardInverseIsIdentityAndOutputsReduced) {
  for (int trial = 0; trial < 3; ++trial) {
    auto a = random_poly(n, q, rng);
    if (trial == 1) a.assign(n, q - 1);  // largest inputs
    const auto original = a;
    table->forward(a.data());
    for (u64 x : a) ASSERT_LT(x, q);
    EXPECT_NE(a, original);
    table->inverse(a.data());
    for (u64 x : a) ASSERT_LT(x, q);
    EXPECT_EQ(a, original);
  }
}

TEST_P(NttTest, ScalarAndDispatchedPathsAreBitIdentical) {
  for (int trial = 0; trial < 3; ++trial) {
    auto a = random_poly(n, q, rng);
    if (trial == 1) a.assign(n, q - 1);
    auto b = a;
    table->forward(a.data());
    table->forward_scalar(b.data());
    ASSERT_EQ(a, b);
    table->inverse(a.data());
    table->inverse_scalar(b.data());
    ASSERT_EQ(a, b);
  }
  // The inverse of the largest inputs: its sums grow fastest.
  std::vector<u64> a(n, q - 1), b(n, q - 1);
  table->inverse(a.data());
  table->inverse_scalar(b.data());
  ASSERT_EQ(a, b);
}

TEST_P(NttTest, ForwardIsEvaluationAtOddPowersOfPsi) {
  const auto a = random_poly(n, q, rng);
  auto ntt = a;
  table->forward(ntt.data());
  const int log_n = GetParam().log_n;
  for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{7}, n / 2 + 3, n - 1}) {
    const u64 exponent = 2 * static_cast<u64>(bit_reverse(static_cast<std::uint32_t>(i), log_n)) + 1;
    const u64 point = powmod(table->psi(), exponent, q);
    u64 value = 0;  // Horner
    for (std::size_t k = n; k-- > 0;) value = (mulmod(value, point, q) + a[k]) % q;
    EXPECT_EQ(ntt[i], value) << "index " << i;
  }
}

TEST_P(NttTest, MonomialTransformsToPowersOfPsi) {
  // X -> psi^(2 bitrev(i) + 1) at every index.
  std::vector<u64> x(n, 0);
  x[1] = 1;
  table->forward(x.data());
  for (std::uint64_t i = 0; i < n; ++i) {
    const u64 exponent = 2 * static_cast<u64>(bit_reverse(static_cast<std::uint32_t>(i), GetParam().log_n)) + 1;
    ASSERT_EQ(x[i], powmod(table->psi(), exponent, q)) << "index " << i;
  }
}

TEST_P(NttTest, XToTheNIsMinusOne) {
  // X^(N-1) * X = X^N = -1 in the negacyclic ring.
  std::vector<u64> a(n, 0), b(n, 0);
  a[n - 1] = 1;
  b[1] = 1;
  table->forward(a.data());
  table->forward(b.data());
  for (std::size_t i = 0; i < n; ++i) a[i] = mulmod(a[i], b[i], q);
  table->inverse(a.data());
  std::vector<u64> expected(n, 0);
  expected[0] = q - 1;
  EXPECT_EQ(a, expected);
}

INSTANTIATE_TEST_SUITE_P(NttShapes, NttTest,
                         // 30..44 bits: the double-precision path (below 2^44), 45+: the integer one.
                         testing::Values(NttShape{10, 40}, NttShape{10, 60}, NttShape{11, 43}, NttShape{11, 60},
                                         NttShape{12, 40}, NttShape{12, 45}, NttShape{12, 60}, NttShape{13, 30},
                                         NttShape{13, 50}, NttShape{14, 40}, NttShape{14, 60}, NttShape{15, 61},
                                         NttShape{16, 44}, NttShape{17, 43}),
                         ntt_name);

TEST(NttProductTest, NegacyclicProductMatchesSchoolbook) {
  std::mt19937_64 rng(5);
  for (std::uint64_t n : {1024ULL, 2048ULL}) {
    for (int bits : {40, 60}) {
      const u64 q = generate_ntt_primes({bits}, n)[0];
      const NttTable table(n, Modulus(q));
      const auto a = random_poly(n, q, rng);
      const auto b = random_poly(n, q, rng);
      auto fa = a, fb = b;
      table.forward(fa.data());
      table.forward(fb.data());
      std::vector<u64> c(n);
      for (std::size_t i = 0; i < n; ++i) c[i] = mulmod(fa[i], fb[i], q);
      table.inverse(c.data());
      EXPECT_EQ(c, schoolbook_negacyclic(a, b, q)) << "N = " << n << ", q = " << q;
    }
  }
}

TEST(NttBitReverseTest, InvolutionAndKnownValues) {
  EXPECT_EQ(bit_reverse(0, 10), 0u);
  EXPECT_EQ(bit_reverse(1, 10), 512u);
  EXPECT_EQ(bit_reverse(0b0000000110, 10), 0b0110000000u);
  EXPECT_EQ(bit_reverse(1023, 10), 1023u);
  for (std::uint32_t x = 0; x < 4096; ++x) EXPECT_EQ(bit_reverse(bit_reverse(x, 12), 12), x);
}

}  // namespace
}  // namespace fhelium::test
