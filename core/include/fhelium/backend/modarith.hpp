// Word-level modular arithmetic for primes below 2^62 (64-bit words).
#pragma once

#include <cstdint>

namespace fhelium {

using u64 = std::uint64_t;
using u32 = std::uint32_t;
__extension__ using u128 = unsigned __int128;  // GCC and Clang extension

// A prime modulus with its Barrett constant floor(2^128 / q).
struct Modulus {
  u64 value = 0;
  u64 ratio_lo = 0;
  u64 ratio_hi = 0;

  Modulus() = default;
  explicit Modulus(u64 q);
};

inline u64 add_mod(u64 a, u64 b, u64 q) {
  u64 s = a + b;
  return s >= q ? s - q : s;
}

inline u64 sub_mod(u64 a, u64 b, u64 q) { return a >= b ? a - b : a + q - b; }

inline u64 neg_mod(u64 a, u64 q) { return a == 0 ? 0 : q - a; }

// Barrett reduction of a 128-bit value (any value below 2^128).
inline u64 reduce128(u128 z, const Modulus& m) {
  const u64 lo = static_cast<u64>(z);
  const u64 hi = static_cast<u64>(z >> 64);
  const u128 t = (static_cast<u128>(lo) * m.ratio_lo) >> 64;
  const u128 a = static_cast<u128>(lo) * m.ratio_hi + t;
  const u128 b = static_cast<u128>(hi) * m.ratio_lo + static_cast<u64>(a);
  const u64 quotient = hi * m.ratio_hi + static_cast<u64>(a >> 64) + static_cast<u64>(b >> 64);
  // quotient = floor(z * floor(2^128 / q) / 2^128) exactly, at most one short.
  const u64 r = lo - quotient * m.value;
  return r >= m.value ? r - m.value : r;
}

// x mod q for a 64-bit x: floor(2^64 / q) = ratio_hi estimates the quotient
// at most one short.
inline u64 reduce64(u64 x, const Modulus& m) {
  const u64 quotient = static_cast<u64>((static_cast<u128>(x) * m.ratio_hi) >> 64);
  const u64 r = x - quotient * m.value;
  return r >= m.value ? r - m.value : r;
}

inline u64 mul_mod(u64 a, u64 b, const Modulus& m) { return reduce128(static_cast<u128>(a) * b, m); }

// Shoup's precomputation for multiplying by the constant w: floor(w 2^64 / q).
inline u64 shoup(u64 w, u64 q) { return static_cast<u64>((static_cast<u128>(w) << 64) / q); }

// x * w mod q in [0, 2q), for any x < 2^64 (Harvey's lazy form).
inline u64 mul_shoup_lazy(u64 x, u64 w, u64 w_shoup, u64 q) {
  const u64 quotient = static_cast<u64>((static_cast<u128>(x) * w_shoup) >> 64);
  return x * w - quotient * q;
}

inline u64 mul_shoup(u64 x, u64 w, u64 w_shoup, u64 q) {
  const u64 r = mul_shoup_lazy(x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

// The same in 32-bit words, for primes below 2^31 (results below 2q < 2^32).
inline u32 shoup(u32 w, u32 q) { return static_cast<u32>((static_cast<u64>(w) << 32) / q); }

inline u32 mul_shoup_lazy(u32 x, u32 w, u32 w_shoup, u32 q) {
  const auto quotient = static_cast<u32>((static_cast<u64>(x) * w_shoup) >> 32);
  return x * w - quotient * q;
}

inline u32 mul_shoup(u32 x, u32 w, u32 w_shoup, u32 q) {
  const u32 r = mul_shoup_lazy(x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

// A prime below 2^31 (the 32-bit word family) with the constants that
// reduce a 64-bit sum of residue products in 32-bit multiplies: a sum of
// three products of residues below 2^31 stays below 2^64, so a kernel adds
// products in a u64 and folds every third one.
struct NarrowModulus {
  static constexpr u64 limit = u64{1} << 31;  // exclusive
  u32 value = 0;
  u32 two32 = 0;  // 2^32 mod q
  u32 two32_shoup = 0;
  u32 one_shoup = 0;  // shoup(1, q) = floor(2^32 / q)

  NarrowModulus() = default;
  explicit NarrowModulus(u64 q);
};

// x mod q for any 64-bit x: x = h 2^32 + l = h [2^32]_q + l, each product
// below 2q by Shoup's lazy form, so the sum is below 4q.
inline u32 reduce_narrow(u64 x, const NarrowModulus& m) {
  const u64 q = m.value;
  u64 t = u64{mul_shoup_lazy(static_cast<u32>(x >> 32), m.two32, m.two32_shoup, m.value)} +
          mul_shoup_lazy(static_cast<u32>(x), u32{1}, m.one_shoup, m.value);
  t = t >= 2 * q ? t - 2 * q : t;
  return static_cast<u32>(t >= q ? t - q : t);
}

u64 pow_mod(u64 base, u64 exponent, const Modulus& m);
// Inverse modulo a prime; throws ParameterError when a is 0 mod q.
u64 inv_mod(u64 a, const Modulus& m);

}  // namespace fhelium
