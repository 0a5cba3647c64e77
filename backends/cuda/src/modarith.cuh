// Word-level modular arithmetic on the device, exact for primes below 2^62.
// The same functions as fhelium/backend/modarith.hpp with 128-bit products split into
// (lo, hi) words.
#pragma once

#include "device_types.hpp"

namespace fhelium::cuda {

__device__ __forceinline__ u64 add_mod(u64 a, u64 b, u64 q) {
  const u64 s = a + b;
  return s >= q ? s - q : s;
}

__device__ __forceinline__ u64 sub_mod(u64 a, u64 b, u64 q) { return a >= b ? a - b : a + q - b; }

__device__ __forceinline__ u64 neg_mod(u64 a, u64 q) { return a == 0 ? 0 : q - a; }

// A 128-bit accumulator.
struct U128 {
  u64 lo = 0;
  u64 hi = 0;
};

__device__ __forceinline__ void mul_add(U128& acc, u64 a, u64 b) {
  const u64 lo = a * b;
  const u64 hi = __umul64hi(a, b);
  acc.lo += lo;
  acc.hi += hi + (acc.lo < lo ? 1 : 0);
}

// Barrett reduction of any 128-bit value (hi:lo) modulo m.value.
__device__ __forceinline__ u64 reduce128(u64 lo, u64 hi, const DevPrime& m) {
  const u64 t = __umul64hi(lo, m.ratio_lo);
  // a = lo * ratio_hi + t
  u64 a_lo = lo * m.ratio_hi;
  u64 a_hi = __umul64hi(lo, m.ratio_hi);
  a_lo += t;
  a_hi += a_lo < t ? 1 : 0;
  // b = hi * ratio_lo + low64(a)
  u64 b_lo = hi * m.ratio_lo;
  u64 b_hi = __umul64hi(hi, m.ratio_lo);
  b_lo += a_lo;
  b_hi += b_lo < a_lo ? 1 : 0;
  const u64 quotient = hi * m.ratio_hi + a_hi + b_hi;
  u64 r = lo - quotient * m.value;
  if (r >= m.value) r -= m.value;
  if (r >= m.value) r -= m.value;
  return r;
}

__device__ __forceinline__ u64 reduce128(const U128& x, const DevPrime& m) { return reduce128(x.lo, x.hi, m); }

// x mod q for a 64-bit x (floor(2^64 / q) = ratio_hi, quotient at most one short).
__device__ __forceinline__ u64 reduce64(u64 x, const DevPrime& m) {
  const u64 quotient = __umul64hi(x, m.ratio_hi);
  const u64 r = x - quotient * m.value;
  return r >= m.value ? r - m.value : r;
}

__device__ __forceinline__ u64 mul_mod(u64 a, u64 b, const DevPrime& m) { return reduce128(a * b, __umul64hi(a, b), m); }

// x * w mod q in [0, 2q) for any 64-bit x (Shoup / Harvey).
__device__ __forceinline__ u64 mul_shoup_lazy(u64 x, u64 w, u64 w_shoup, u64 q) {
  return x * w - __umul64hi(x, w_shoup) * q;
}

__device__ __forceinline__ u64 mul_shoup(u64 x, u64 w, u64 w_shoup, u64 q) {
  const u64 r = mul_shoup_lazy(x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

}  // namespace fhelium::cuda
