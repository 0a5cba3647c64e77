// Primality, NTT-friendly prime generation and primitive roots.
#include "fhelium/primes.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/backend/modarith.hpp"

namespace fhelium::test {
namespace {

// Trial division, for checking is_prime on small numbers.
bool slow_is_prime(std::uint64_t n) {
  if (n < 2) return false;
  for (std::uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(PrimesTest, IsPrimeMatchesTrialDivisionBelow20000) {
  for (std::uint64_t n = 0; n < 20000; ++n) EXPECT_EQ(is_prime(n), slow_is_prime(n)) << n;
}

TEST(PrimesTest, IsPrimeKnownPrimes) {
  // Every constant checked with sympy.isprime.
  for (std::uint64_t p : {2ULL, 3ULL, 37ULL, 41ULL, 998244353ULL, 1000000007ULL, 4294967279ULL, 4294967291ULL,
                          (1ULL << 61) - 1,            // Mersenne prime
                          (1ULL << 62) - 57,           // largest prime below 2^62
                          (1ULL << 63) - 25,           // largest prime below 2^63
                          18446744073709551557ULL}) {  // largest prime below 2^64
    EXPECT_TRUE(is_prime(p)) << p;
  }
}

TEST(PrimesTest, IsPrimeRejectsCarmichaelAndStrongPseudoprimes) {
  for (std::uint64_t c : {0ULL, 1ULL, 4ULL, 561ULL, 1105ULL, 1729ULL,
                          3215031751ULL,            // strong pseudoprime to bases 2, 3, 5, 7
                          341550071728321ULL,       // strong pseudoprime to bases 2 .. 19
                          3825123056546413051ULL,   // strong pseudoprime to bases 2 .. 31
                          18446744030759878681ULL,  // (2^32 - 5)^2
                          18446743979220271189ULL,  // (2^32 - 5)(2^32 - 17)
                          (1ULL << 62) - 1, 18446744073709551615ULL}) {
    EXPECT_FALSE(is_prime(c)) << c;
  }
}

void expect_ntt_primes(const std::vector<std::uint64_t>& primes, const std::vector<int>& bits, std::uint64_t n) {
  ASSERT_EQ(primes.size(), bits.size());
  for (std::size_t i = 0; i < primes.size(); ++i) {
    const std::uint64_t q = primes[i];
    EXPECT_TRUE(is_prime(q)) << q;
    EXPECT_EQ(q % (2 * n), 1u) << q;
    EXPECT_GE(q, std::uint64_t{1} << (bits[i] - 1)) << q;
    EXPECT_LT(q, std::uint64_t{1} << bits[i]) << q;
  }
}

TEST(PrimesTest, GeneratedPrimesHaveRequestedShape) {
  const std::vector<int> bits = {60, 40, 40, 40, 50, 61, 30, 20, 40};
  for (std::uint64_t n : {1024ULL, 16384ULL, 65536ULL}) {
    const auto primes = generate_ntt_primes(bits, n);
    expect_ntt_primes(primes, bits, n);
    EXPECT_EQ(std::set<std::uint64_t>(primes.begin(), primes.end()).size(), primes.size());
  }
}

TEST(PrimesTest, SmallGeneratedPrimesAreReallyPrime) {
  const std::vector<int> bits(6, 24);
  const auto primes = generate_ntt_primes(bits, 1024);
  for (std::uint64_t q : primes) EXPECT_TRUE(slow_is_prime(q)) << q;
}

TEST(PrimesTest, KnownAnswers) {
  // Computed independently (python3 + sympy): the largest primes below 2^b
  // that are 1 mod 2N, in decreasing order.
  EXPECT_EQ(generate_ntt_primes({40, 40}, 1ULL << 14),
            (std::vector<std::uint64_t>{1099510054913ULL, 1099508121601ULL}));
  EXPECT_EQ(generate_ntt_primes({60, 60}, 1ULL << 16),
            (std::vector<std::uint64_t>{1152921504606584833ULL, 1152921504598720513ULL}));
  EXPECT_EQ(generate_ntt_primes({20}, 1ULL << 17), (std::vector<std::uint64_t>{786433ULL}));
}

TEST(PrimesTest, ExclusionAndDeterminism) {
  const std::uint64_t n = 1ULL << 13;
  const auto first = generate_ntt_primes({40, 40, 50}, n);
  EXPECT_EQ(first, generate_ntt_primes({40, 40, 50}, n));
  const std::set<std::uint64_t> used(first.begin(), first.end());
  const auto second = generate_ntt_primes({40, 40, 50}, n, used);
  expect_ntt_primes(second, {40, 40, 50}, n);
  for (std::uint64_t q : second) EXPECT_EQ(used.count(q), 0u) << q;
  // The excluded primes are the largest ones, so the new ones are smaller.
  EXPECT_LT(second[0], first[1]);
  EXPECT_LT(second[2], first[2]);
}

TEST(PrimesTest, BitSizeOutOfRangeThrows) {
  EXPECT_THROW(generate_ntt_primes({19}, 1024), ParameterError);
  EXPECT_THROW(generate_ntt_primes({62}, 1024), ParameterError);
  EXPECT_THROW(generate_ntt_primes({40, 62}, 1024), ParameterError);
  EXPECT_NO_THROW(generate_ntt_primes({20, 61}, 1024));
}

TEST(PrimesTest, TooFewPrimesThrowsNamingTheBitSize) {
  // Below 2^20 with q = 1 mod 2^18 the only candidates are 786433 (prime)
  // and 524289 = 2^19 + 1 (divisible by 3): one prime only.
  EXPECT_NO_THROW(generate_ntt_primes({20}, 1ULL << 17));
  try {
    generate_ntt_primes({20, 20}, 1ULL << 17);
    FAIL() << "expected ParameterError";
  } catch (const ParameterError& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("20"));
  }
  EXPECT_THROW(generate_ntt_primes({20}, 1ULL << 17, {786433ULL}), ParameterError);
}

TEST(PrimesTest, MinimalPrimitiveRoot) {
  for (std::uint64_t n : {1024ULL, 4096ULL, 65536ULL}) {
    for (std::uint64_t q : generate_ntt_primes({30, 40, 60}, n)) {
      const Modulus m(q);
      const std::uint64_t r = minimal_primitive_root(2 * n, q);
      EXPECT_EQ(pow_mod(r, n, m), q - 1) << q;
      EXPECT_EQ(pow_mod(r, 2 * n, m), 1u) << q;
      EXPECT_GT(r, 1u);
      EXPECT_LT(r, q);
    }
  }
}

TEST(PrimesTest, MinimalPrimitiveRootIsSmallest) {
  // Brute force for a small prime: no smaller x has x^N = -1.
  const std::uint64_t n = 1024;
  const std::uint64_t q = generate_ntt_primes({20}, n)[0];
  const Modulus m(q);
  const std::uint64_t r = minimal_primitive_root(2 * n, q);
  for (std::uint64_t x = 2; x < r; ++x) EXPECT_NE(pow_mod(x, n, m), q - 1) << x;
  EXPECT_EQ(pow_mod(r, n, m), q - 1);
}

}  // namespace
}  // namespace fhelium::test
