// Word arithmetic against 128-bit reference arithmetic, at every prime size.
#include "fhelium/backend/modarith.hpp"

#include <gtest/gtest.h>

#include <random>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"

namespace fhelium::test {
namespace {

TEST(ModarithTest, MulModAndReduceMatchReferenceForEveryBitSize) {
  std::mt19937_64 rng(5);
  for (int bits = 20; bits <= 61; ++bits) {
    const u64 q = generate_ntt_primes({bits}, 1024)[0];
    const Modulus m(q);
    const u64 edges[] = {0, 1, 2, q / 2, q / 2 + 1, q - 2, q - 1};
    for (u64 a : edges) {
      for (u64 b : edges) {
        ASSERT_EQ(mul_mod(a, b, m), static_cast<u64>(static_cast<u128>(a) * b % q)) << a << " * " << b << " mod " << q;
      }
    }
    for (int i = 0; i < 2000; ++i) {
      const u64 a = rng() % q;
      const u64 b = rng() % q;
      ASSERT_EQ(mul_mod(a, b, m), static_cast<u64>(static_cast<u128>(a) * b % q)) << a << " * " << b << " mod " << q;
      const u128 z = (static_cast<u128>(rng()) << 64) | rng();
      ASSERT_EQ(reduce128(z, m), static_cast<u64>(z % q));
      const u64 x = rng();
      ASSERT_EQ(reduce64(x, m), x % q);
    }
    const u128 all_ones = ~u128{0};
    ASSERT_EQ(reduce128(all_ones, m), static_cast<u64>(all_ones % q));
  }
}

TEST(ModarithTest, ShoupMultiplicationIsLazyThenExact) {
  std::mt19937_64 rng(6);
  const u64 q = generate_ntt_primes({60}, 4096)[0];
  for (int i = 0; i < 10000; ++i) {
    const u64 w = rng() % q;
    const u64 x = rng();  // any 64-bit input
    const u64 lazy = mul_shoup_lazy(x, w, shoup(w, q), q);
    ASSERT_LT(lazy, 2 * q);
    ASSERT_EQ(lazy % q, static_cast<u64>(static_cast<u128>(x) * w % q));
  }
}

TEST(ModarithTest, NarrowReductionIsExactForEvery64BitValue) {
  std::mt19937_64 rng(8);
  for (int bits = 20; bits <= 31; ++bits) {
    const u64 q = generate_ntt_primes({bits}, 1024)[0];
    const NarrowModulus m(q);
    const u64 edges[] = {0, 1, q - 1, q, 2 * q - 1, (u64{1} << 32) - 1, u64{1} << 32, ~u64{0}, ~u64{0} - q};
    for (u64 x : edges) ASSERT_EQ(reduce_narrow(x, m), x % q) << x << " mod " << q;
    for (int i = 0; i < 20000; ++i) {
      const u64 x = rng();
      ASSERT_EQ(reduce_narrow(x, m), x % q) << x << " mod " << q;
    }
  }
  EXPECT_THROW(NarrowModulus(u64{1} << 31), ParameterError);
}

}  // namespace
}  // namespace fhelium::test
