// The shared limb loops against 128-bit reference arithmetic at every prime
// size, with lengths that leave a scalar tail after the AVX2 lanes.
#include "fhelium/backend/limb_kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "fhelium/primes.hpp"

namespace fhelium::test {
namespace {

constexpr std::size_t length = 1027;  // 256 groups of four and a tail of three

// Random residues below `bound`, with the edge values first.
std::vector<u64> residues(std::mt19937_64& rng, u64 bound) {
  std::vector<u64> v{0, 1, bound / 2, bound / 2 + 1, bound - 2, bound - 1};
  while (v.size() < length) v.push_back(rng() % bound);
  return v;
}

u64 reference_product(u64 a, u64 b, u64 q) { return static_cast<u64>(static_cast<u128>(a) * b % q); }

TEST(LimbKernelsTest, MultiplyResiduesMatchesReference) {
  std::mt19937_64 rng(11);
  for (int bits = 20; bits <= 61; ++bits) {
    const Modulus q(generate_ntt_primes({bits}, 1024)[0]);
    const auto x = residues(rng, q.value);
    auto y = residues(rng, q.value);
    std::reverse(y.begin(), y.end());
    std::vector<u64> out(length);
    multiply_residues(x.data(), y.data(), out.data(), length, q);
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(out[k], reference_product(x[k], y[k], q.value)) << x[k] << " * " << y[k] << " mod " << q.value;
    }
    multiply_residues(x.data(), y.data(), y.data(), length, q);  // in place
    ASSERT_EQ(y, out);
  }
}

TEST(LimbKernelsTest, AddAndSubtractMatchReference) {
  std::mt19937_64 rng(16);
  for (int bits = 20; bits <= 61; ++bits) {
    const u64 q = generate_ntt_primes({bits}, 1024)[0];
    const auto x = residues(rng, q);
    auto y = residues(rng, q);
    std::reverse(y.begin(), y.end());
    std::vector<u64> sum(length), difference(length);
    add_residues(x.data(), y.data(), sum.data(), length, q);
    subtract_residues(x.data(), y.data(), difference.data(), length, q);
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(sum[k], (x[k] + y[k]) % q) << x[k] << " + " << y[k] << " mod " << q;
      ASSERT_EQ(difference[k], (x[k] + q - y[k]) % q) << x[k] << " - " << y[k] << " mod " << q;
    }
  }
}

TEST(LimbKernelsTest, MultiplyCrossMatchesReference) {
  std::mt19937_64 rng(15);
  for (int bits = 20; bits <= 61; ++bits) {
    const Modulus q(generate_ntt_primes({bits}, 1024)[0]);
    const auto a0 = residues(rng, q.value), b1 = residues(rng, q.value);
    auto a1 = residues(rng, q.value), b0 = residues(rng, q.value);
    std::reverse(a1.begin(), a1.end());
    std::vector<u64> out(length);
    multiply_cross(a0.data(), b1.data(), a1.data(), b0.data(), out.data(), length, q);
    for (std::size_t k = 0; k < length; ++k) {
      const u128 z = static_cast<u128>(a0[k]) * b1[k] + static_cast<u128>(a1[k]) * b0[k];
      ASSERT_EQ(out[k], static_cast<u64>(z % q.value)) << k << " mod " << q.value;
    }
  }
}

TEST(LimbKernelsTest, ReduceSubtractMatchesReferenceForWordsBelow2To62) {
  std::mt19937_64 rng(12);
  for (int bits = 20; bits <= 61; ++bits) {
    const Modulus q(generate_ntt_primes({bits}, 1024)[0]);
    auto t = residues(rng, u64{1} << 62);
    t[6] = q.value;
    t[7] = 2 * q.value - 1;
    const u64 c = rng() % q.value;
    std::vector<u64> out(length);
    reduce_subtract(t.data(), out.data(), length, q, c);
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(out[k], (t[k] % q.value + q.value - c) % q.value) << t[k] << " mod " << q.value << " - " << c;
    }
  }
}

TEST(LimbKernelsTest, MultiplyDifferenceMatchesReference) {
  std::mt19937_64 rng(13);
  for (int bits = 20; bits <= 61; ++bits) {
    const Modulus q(generate_ntt_primes({bits}, 1024)[0]);
    const auto x = residues(rng, q.value);
    const auto y = residues(rng, q.value);
    const u64 w = rng() % q.value;
    std::vector<u64> out(length);
    multiply_difference(x.data(), y.data(), out.data(), length, w, shoup(w, q.value), q.value);
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(out[k], reference_product((x[k] + q.value - y[k]) % q.value, w, q.value)) << k << " mod " << q.value;
    }
    const auto add = residues(rng, q.value);
    std::vector<u64> sum(length);
    multiply_difference(x.data(), y.data(), sum.data(), length, w, shoup(w, q.value), q.value, add.data());
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(sum[k], static_cast<u64>((static_cast<u128>(out[k]) + add[k]) % q.value)) << k << " mod " << q.value;
    }
  }
}

TEST(LimbKernelsTest, LiftCenteredMatchesSignedReference) {
  std::mt19937_64 rng(14);
  // Sources above, near and below the target: both reduction paths.
  for (int from_bits : {30, 40, 50, 60, 61}) {
    for (int to_bits : {20, 40, 59, 61}) {
      const auto primes = generate_ntt_primes({from_bits, to_bits}, 1024);
      const u64 a0 = primes[0];
      const Modulus b(primes[1]);
      const auto in = residues(rng, a0);
      std::vector<u64> out(length);
      lift_centered(in.data(), out.data(), length, a0, b, a0 % b.value);
      for (std::size_t k = 0; k < length; ++k) {
        const u64 expected = in[k] > (a0 - 1) / 2 ? (b.value - (a0 - in[k]) % b.value) % b.value : in[k] % b.value;
        ASSERT_EQ(out[k], expected) << in[k] << " mod " << a0 << " lifted to " << b.value;
      }
    }
  }
}

// The 32-bit loops against the same references, for primes of 20 to 31 bits.
std::vector<u32> narrowed(const std::vector<u64>& v) { return {v.begin(), v.end()}; }

TEST(LimbKernelsTest, The32BitLoopsMatchReference) {
  std::mt19937_64 rng(21);
  for (int bits = 20; bits <= 31; ++bits) {
    const u64 q = generate_ntt_primes({bits}, 1024)[0];
    const NarrowModulus m(q);
    const auto x64 = residues(rng, q);
    auto y64 = residues(rng, q);
    std::reverse(y64.begin(), y64.end());
    const auto z64 = residues(rng, q);
    const auto x = narrowed(x64), y = narrowed(y64), z = narrowed(z64);
    std::vector<u32> sum(length), difference(length), product(length), cross(length), scaled(length);
    add_residues(x.data(), y.data(), sum.data(), length, static_cast<u32>(q));
    subtract_residues(x.data(), y.data(), difference.data(), length, static_cast<u32>(q));
    multiply_residues(x.data(), y.data(), product.data(), length, m);
    multiply_cross(x.data(), y.data(), z.data(), x.data(), cross.data(), length, m);
    const auto w = static_cast<u32>(rng() % q);
    multiply_difference(x.data(), y.data(), scaled.data(), length, w, shoup(w, static_cast<u32>(q)),
                        static_cast<u32>(q), z.data());
    for (std::size_t k = 0; k < length; ++k) {
      ASSERT_EQ(sum[k], (x64[k] + y64[k]) % q) << k << " mod " << q;
      ASSERT_EQ(difference[k], (x64[k] + q - y64[k]) % q) << k << " mod " << q;
      ASSERT_EQ(product[k], reference_product(x64[k], y64[k], q)) << k << " mod " << q;
      ASSERT_EQ(cross[k], (reference_product(x64[k], y64[k], q) + reference_product(z64[k], x64[k], q)) % q) << k;
      ASSERT_EQ(scaled[k], (reference_product((x64[k] + q - y64[k]) % q, w, q) + z64[k]) % q) << k;
    }
  }
}

TEST(LimbKernelsTest, The32BitInnerProductMatchesReferenceWithAndWithoutPermutation) {
  std::mt19937_64 rng(22);
  const std::size_t n = 2048;
  for (int bits : {20, 30, 31}) {
    const u64 q = generate_ntt_primes({bits}, n)[0];
    const NarrowModulus m(q);
    for (int digits : {1, 2, 3, 4, 7}) {
      std::vector<std::vector<u32>> xs, bs, as;
      std::vector<const u32*> x, b, a;
      for (int j = 0; j < digits; ++j) {
        for (auto* v : {&xs, &bs, &as}) {
          v->emplace_back(n);
          for (auto& r : v->back()) r = static_cast<u32>(rng() % q);
          v->back()[0] = static_cast<u32>(q - 1);  // the largest products
        }
        x.push_back(xs.back().data());
        b.push_back(bs.back().data());
        a.push_back(as.back().data());
      }
      std::vector<std::uint32_t> perm(n);
      for (std::size_t k = 0; k < n; ++k) perm[k] = static_cast<std::uint32_t>((k * 5 + 3) % n);
      const std::uint32_t* identity = nullptr;
      for (const std::uint32_t* p : {identity, static_cast<const std::uint32_t*>(perm.data())}) {
        std::vector<u32> acc0(n), acc1(n), scalar0(n), scalar1(n);
        multiply_accumulate(x.data(), b.data(), a.data(), digits, p, n, m, acc0.data(), acc1.data());
        multiply_accumulate_scalar(x.data(), b.data(), a.data(), digits, p, n, m, scalar0.data(), scalar1.data());
        ASSERT_EQ(acc0, scalar0) << "vector against scalar, " << digits << " digits";
        ASSERT_EQ(acc1, scalar1) << "vector against scalar, " << digits << " digits";
        for (std::size_t k = 0; k < n; ++k) {
          u128 sum0 = 0, sum1 = 0;
          for (int j = 0; j < digits; ++j) {
            const u64 e = x[static_cast<std::size_t>(j)][p ? p[k] : k];
            sum0 += static_cast<u128>(e) * b[static_cast<std::size_t>(j)][k];
            sum1 += static_cast<u128>(e) * a[static_cast<std::size_t>(j)][k];
          }
          ASSERT_EQ(acc0[k], static_cast<u64>(sum0 % q)) << k << ", " << digits << " digits mod " << q;
          ASSERT_EQ(acc1[k], static_cast<u64>(sum1 % q)) << k << ", " << digits << " digits mod " << q;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fhelium::test
