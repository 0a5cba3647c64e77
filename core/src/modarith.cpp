#include "fhelium/backend/modarith.hpp"

#include <string>

#include "fhelium/error.hpp"

namespace fhelium {

Modulus::Modulus(u64 q) : value(q) {
  if (q < 2 || q >= (u64{1} << 62)) {
    throw ParameterError("modulus " + std::to_string(q) + " is out of range: expected 2 <= q < 2^62");
  }
  // floor((2^128 - 1) / q) equals floor(2^128 / q) for every q that is not a power of two.
  const u128 all_ones = ~u128{0};
  const u128 ratio = all_ones / q;
  ratio_lo = static_cast<u64>(ratio);
  ratio_hi = static_cast<u64>(ratio >> 64);
}

NarrowModulus::NarrowModulus(u64 q) : value(static_cast<u32>(q)) {
  if (q < 2 || q >= limit) {
    throw ParameterError("modulus " + std::to_string(q) + " is out of range for 32-bit words: expected 2 <= q < 2^31");
  }
  two32 = static_cast<u32>((u64{1} << 32) % q);
  two32_shoup = shoup(two32, value);
  one_shoup = shoup(u32{1}, value);
}

u64 pow_mod(u64 base, u64 exponent, const Modulus& m) {
  u64 result = 1 % m.value;
  base %= m.value;
  while (exponent != 0) {
    if (exponent & 1) result = mul_mod(result, base, m);
    base = mul_mod(base, base, m);
    exponent >>= 1;
  }
  return result;
}

u64 inv_mod(u64 a, const Modulus& m) {
  if (a % m.value == 0) {
    throw ParameterError("value " + std::to_string(a) + " has no inverse modulo " + std::to_string(m.value));
  }
  return pow_mod(a, m.value - 2, m);
}

}  // namespace fhelium
