// Modular arithmetic in 32-bit words on the device, for primes below 2^31:
// the same residues as modarith.hpp's 32-bit functions.
#pragma once

#include "narrow_types.hpp"

namespace fhelium::cuda::narrow {

// x w mod q in [0, 2q) (Harvey's lazy form), for any x < 2^32.
__device__ __forceinline__ u32 mul_shoup_lazy(u32 x, u32 w, u32 w_shoup, u32 q) {
  return x * w - __umulhi(x, w_shoup) * q;
}

// a b + c in one wide multiply-add: written out because the compiler, given
// the operands already widened to 64 bits, multiplies all 64 bits.
__device__ __forceinline__ std::uint64_t mad_wide(u32 a, u32 b, std::uint64_t c) {
  std::uint64_t r;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
  return r;
}

__device__ __forceinline__ u32 mul_shoup(u32 x, u32 w, u32 w_shoup, u32 q) {
  const u32 r = mul_shoup_lazy(x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

__device__ __forceinline__ u32 add_mod(u32 a, u32 b, u32 q) {
  const u32 s = a + b;  // below 2q < 2^32
  return s >= q ? s - q : s;
}

__device__ __forceinline__ u32 sub_mod(u32 a, u32 b, u32 q) { return a >= b ? a - b : a + q - b; }

// x mod q for any 64-bit x (reduce_narrow): x = h 2^32 + l, each part by
// Shoup's lazy product, the sum below 4q.
__device__ __forceinline__ u32 reduce(std::uint64_t x, const Prime& m) {
  const std::uint64_t q = m.q;
  std::uint64_t t = std::uint64_t{mul_shoup_lazy(static_cast<u32>(x >> 32), m.two32, m.two32_shoup, m.q)} +
                    mul_shoup_lazy(static_cast<u32>(x), 1u, m.one_shoup, m.q);
  t = t >= 2 * q ? t - 2 * q : t;
  return static_cast<u32>(t >= q ? t - q : t);
}

__device__ __forceinline__ u32 mul_mod(u32 a, u32 b, const Prime& m) {
  return reduce(static_cast<std::uint64_t>(a) * b, m);
}

}  // namespace fhelium::cuda::narrow
