#include "fhelium/primes.hpp"

#include <string>

#include "fhelium/error.hpp"
#include "fhelium/backend/modarith.hpp"

namespace fhelium {
namespace {

u64 pow_mod_u128(u64 base, u64 exponent, u64 n) {
  u64 result = 1;
  base %= n;
  while (exponent != 0) {
    if (exponent & 1) result = static_cast<u64>(static_cast<u128>(result) * base % n);
    base = static_cast<u64>(static_cast<u128>(base) * base % n);
    exponent >>= 1;
  }
  return result;
}

}  // namespace

bool is_prime(std::uint64_t n) {
  if (n < 2) return false;
  for (u64 p : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    if (n % p == 0) return n == p;
  }
  u64 d = n - 1;
  int r = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++r;
  }
  // These bases are a deterministic witness set for all n < 2^64.
  for (u64 a : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    u64 x = pow_mod_u128(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < r; ++i) {
      x = static_cast<u64>(static_cast<u128>(x) * x % n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

std::vector<std::uint64_t> generate_ntt_primes(const std::vector<int>& bit_sizes, std::uint64_t ring_degree,
                                               std::set<std::uint64_t> exclude) {
  const u64 step = 2 * ring_degree;
  std::vector<u64> primes;
  for (int bits : bit_sizes) {
    if (bits < 20 || bits > 61) {
      throw ParameterError("prime size " + std::to_string(bits) + " bits is out of range: expected 20..61");
    }
    const u64 upper = u64{1} << bits;
    const u64 lower = u64{1} << (bits - 1);
    // Largest candidate below 2^bits that is 1 mod 2N.
    u64 candidate = upper - step + 1;
    bool found = false;
    while (candidate > lower) {
      if (!exclude.count(candidate) && is_prime(candidate)) {
        found = true;
        break;
      }
      candidate -= step;
    }
    if (!found) {
      throw ParameterError("no unused prime of " + std::to_string(bits) + " bits with q = 1 mod " +
                           std::to_string(step) + " (ring degree " + std::to_string(ring_degree) +
                           "): the range holds too few NTT-friendly primes");
    }
    exclude.insert(candidate);
    primes.push_back(candidate);
  }
  return primes;
}

std::uint64_t minimal_primitive_root(std::uint64_t two_n, std::uint64_t q) {
  const Modulus m(q);
  if ((q - 1) % two_n != 0) {
    throw ParameterError("prime " + std::to_string(q) + " is not 1 mod " + std::to_string(two_n));
  }
  const u64 cofactor = (q - 1) / two_n;
  // Find any primitive 2N-th root, then the smallest of its odd powers.
  u64 root = 0;
  for (u64 x = 2; x < q; ++x) {
    const u64 g = pow_mod(x, cofactor, m);
    if (pow_mod(g, two_n / 2, m) == q - 1) {
      root = g;
      break;
    }
  }
  const u64 square = mul_mod(root, root, m);
  u64 current = root;
  u64 best = root;
  for (u64 i = 0; i < two_n / 2; ++i) {
    if (current < best) best = current;
    current = mul_mod(current, square, m);
  }
  return best;
}

}  // namespace fhelium
