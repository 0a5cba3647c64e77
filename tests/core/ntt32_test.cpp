// The 32-bit NTT: the AVX2 and scalar paths bit-identical, the same residues
// as the 64-bit transform of the same prime, round trips, products against
// schoolbook, and primes outside its range refused.
#include "fhelium/backend/ntt32.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "expectations.hpp"
#include "fhelium/backend/ntt.hpp"
#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"

namespace fhelium::test {
namespace {

// Random residues, the first 64 the largest ones (q - 1, q - 2) and a few zeros.
std::vector<u32> residues(std::size_t n, u32 q, std::mt19937_64& rng) {
  std::vector<u32> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<u32>(rng() % q);
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 64); ++i) v[i] = q - 1 - static_cast<u32>(i % 2);
  v[n / 2] = 0;
  return v;
}

// The largest NTT-friendly prime of `bits` bits for N (at most 31 bits).
u32 prime(int bits, std::uint64_t n) { return static_cast<u32>(generate_ntt_primes({bits}, n).front()); }

class Ntt32 : public testing::TestWithParam<int> {};

TEST_P(Ntt32, VectorScalarAndWideTransformsAgree) {
  const std::uint64_t n = std::uint64_t{1} << GetParam();
  std::mt19937_64 rng(static_cast<unsigned>(GetParam()));
  // 30 bits: the lazy bounds (4q); 31 bits: the tight ones (2q).
  for (int bits : {20, 25, 30, 31}) {
    if (bits == 20 && n > (std::uint64_t{1} << 17)) continue;
    const u32 q = prime(bits, n);
    SCOPED_TRACE("q = " + std::to_string(q));
    const NttTable32 table(n, q);
    const NttTable wide(n, Modulus(q));
    ASSERT_EQ(table.psi(), wide.psi());
    const std::vector<u32> x = residues(n, q, rng);

    std::vector<u32> forward = x, forward_scalar = x;
    table.forward(forward.data());
    table.forward_scalar(forward_scalar.data());
    std::vector<u64> forward_wide(x.begin(), x.end()), forward_through_narrow = forward_wide;
    wide.forward_scalar(forward_wide.data());
    wide.forward(forward_through_narrow.data());  // NttTable's own call of this transform
    EXPECT_EQ(forward, forward_scalar) << "AVX2 against scalar";
    EXPECT_EQ(std::vector<u64>(forward.begin(), forward.end()), forward_wide) << "against the 64-bit transform";
    EXPECT_EQ(forward_through_narrow, forward_wide) << "NttTable::forward";
    wide.inverse(forward_through_narrow.data());
    EXPECT_EQ(forward_through_narrow, std::vector<u64>(x.begin(), x.end())) << "NttTable::inverse";

    std::vector<u32> back = forward, back_scalar = forward;
    table.inverse(back.data());
    table.inverse_scalar(back_scalar.data());
    EXPECT_EQ(back, x) << "round trip";
    EXPECT_EQ(back_scalar, x) << "scalar round trip";
  }
}

std::string ring_name(const testing::TestParamInfo<int>& param) { return "N" + std::to_string(1 << param.param); }

INSTANTIATE_TEST_SUITE_P(RingSizes, Ntt32, testing::Values(3, 4, 5, 6, 7, 8, 10, 11, 14, 16, 17), ring_name);

// The product of the transforms is the negacyclic product of the polynomials.
TEST(Ntt32, PointwiseProductIsTheNegacyclicProduct) {
  constexpr std::uint64_t n = 256;
  const u32 q = prime(30, n);
  std::mt19937_64 rng(9);
  const std::vector<u32> a = residues(n, q, rng), b = residues(n, q, rng);
  std::vector<u64> expected(n, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) {
      const u64 p = static_cast<u64>(a[i]) * b[j] % q;
      const std::uint64_t k = (i + j) % n;
      expected[k] = (i + j < n) ? (expected[k] + p) % q : (expected[k] + q - p) % q;
    }
  }
  const NttTable32 table(n, q);
  std::vector<u32> fa = a, fb = b;
  table.forward(fa.data());
  table.forward(fb.data());
  std::vector<u32> product(n);
  for (std::uint64_t i = 0; i < n; ++i) product[i] = static_cast<u32>(static_cast<u64>(fa[i]) * fb[i] % q);
  table.inverse(product.data());
  EXPECT_EQ(std::vector<u64>(product.begin(), product.end()), expected);
}

TEST(Ntt32, PrimesFromTwoToTheThirtyOneAreRefused) {
  const std::uint64_t n = 1024;
  const auto q = static_cast<u32>(generate_ntt_primes({32}, n).front());
  expect_contains(error_of<ParameterError>([&] { NttTable32(n, q); }),
                  {"NttTable32", std::to_string(q), "not below 2^31"});
}

}  // namespace
}  // namespace fhelium::test
