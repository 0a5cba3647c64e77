// The two arithmetics of the NTT kernels, chosen per prime by a warp-uniform
// branch (with_arith):
//
// IntArith: 64-bit words, Harvey's lazy butterflies with Shoup twiddles
// (forward values in [0, 4q), inverse in [0, 2q)); any prime below 2^62.
//
// FpArith: primes below 2^44 in double precision, the device form of
// core/src/ntt_fma.cpp. Residues and every intermediate are integers below
// 2^50, so a product splits exactly into h + l (h = fl(x w),
// l = fma(x, w, -h)) and is reduced with a rounded quotient: eight FP64
// instructions per butterfly instead of about twenty-five 32-bit integer ones
// (the H200 issues both at 64 lanes per SM and cycle). Outputs are the
// canonical residues, bit-identical to IntArith's.
//
// Ranges (q < 2^44): a reduced product is within 0.63 q of zero for inputs
// below 2^49 (quotient error below 0.56, |l| below q / 16). Forward: each
// stage adds at most 0.63 q, so 12 stages from inputs below 4q stay below
// 12 q, and 16 from canonical inputs (ntt_wide_cluster.cuh) below 11.1 q. Inverse: a radix-2^R group's first word sums all 2^R inputs, the
// others are sums of at most 2^(R-1) reduced products, so settle() brings
// the first word back within 0.51 q after each pass (and the column kernels
// after every three stages): values stay below 22 q < 2^49.
//
// Every kernel boundary (global memory) holds words in [0, 4q) (forward
// intermediates) or [0, 2q) (inverse intermediates); FpArith writes canonical
// words, so the two arithmetics can meet at any boundary.
#pragma once

#include "device_types.hpp"
#include "modarith.cuh"

namespace fhelium::cuda::ntt {

__device__ __forceinline__ void forward_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q, u64 two_q) {
  const u64 u = x >= two_q ? x - two_q : x;
  const u64 v = mul_shoup_lazy(y, w, w_shoup, q);
  x = u + v;
  y = u - v + two_q;
}

__device__ __forceinline__ void inverse_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q, u64 two_q) {
  const u64 s = x + y;
  const u64 d = x - y + two_q;
  x = s >= two_q ? s - two_q : s;
  y = mul_shoup_lazy(d, w, w_shoup, q);
}

__device__ __forceinline__ u64 reduce_from_4q(u64 x, u64 q) {
  x = x >= 2 * q ? x - 2 * q : x;
  return x >= q ? x - q : x;
}

struct IntArith {
  using Value = u64;
  using Twiddle = TwiddlePair;
  u64 q;
  u64 two_q;
  u64 inv_n;
  u64 inv_n_shoup;

  __device__ explicit IntArith(const DevPrime& p) : q(p.value), two_q(2 * p.value), inv_n(p.inv_n), inv_n_shoup(p.inv_n_shoup) {}
  __device__ static const Twiddle* roots(const NttTables& t, int limb) {
    return t.roots + (static_cast<std::size_t>(limb) << t.log_n);
  }
  __device__ static const Twiddle* inverse_roots(const NttTables& t, int limb) {
    return t.inv_roots + (static_cast<std::size_t>(limb) << t.log_n);
  }
  __device__ Value from_word(u64 x) const { return x; }
  __device__ void forward(Value& x, Value& y, const Twiddle& w) const { forward_butterfly(x, y, w.w, w.w_shoup, q, two_q); }
  __device__ void inverse(Value& x, Value& y, const Twiddle& w) const { inverse_butterfly(x, y, w.w, w.w_shoup, q, two_q); }
  __device__ void settle(Value&) const {}  // inverse values stay in [0, 2q)
  // Forward results as canonical words / as intermediates ([0, 4q), read lazily).
  __device__ u64 forward_word(Value v) const { return reduce_from_4q(v, q); }
  __device__ u64 forward_inter(Value v) const { return v; }
  // Inverse results as intermediates ([0, 2q)) / times n^-1 as canonical words.
  __device__ u64 inverse_inter(Value v) const { return v; }
  __device__ u64 times_inv_n(Value v) const { return mul_shoup(v, inv_n, inv_n_shoup, q); }
};

struct FpArith {
  using Value = double;
  using Twiddle = double;
  double q;
  double q_inverse;
  double inv_n;

  // 1.5 * 2^52: adding it rounds any |x| < 2^51 to an integer (one rounding).
  static constexpr double round_shift = 6755399441055744.0;
  static constexpr double two52 = 4503599627370496.0;
  static constexpr long long two52_bits = 0x4330000000000000ll;

  // q_inverse: the host's 1.0 / q (correctly rounded, as a division here
  // would be), so no block starts with a double division.
  __device__ explicit FpArith(const DevPrime& p)
      : q(from_bits(p.value)),
        q_inverse(double_of_bits(p.inverse_bits)),
        inv_n(from_bits(p.inv_n)) {}
  __device__ FpArith(double q, double q_inverse) : q(q), q_inverse(q_inverse), inv_n(0.0) {}
  __device__ static const Twiddle* roots(const NttTables& t, int limb) {
    return t.roots_fp + (static_cast<std::size_t>(limb) << t.log_n);
  }
  __device__ static const Twiddle* inverse_roots(const NttTables& t, int limb) {
    return t.inv_roots_fp + (static_cast<std::size_t>(limb) << t.log_n);
  }
  __device__ static double double_of_bits(u64 bits) { return __longlong_as_double(static_cast<long long>(bits)); }
  // Integers in [0, 2^52) between their u64 and double forms, through 2^52's bits.
  __device__ static double from_bits(u64 x) {
    return __dsub_rn(__longlong_as_double(static_cast<long long>(x) | two52_bits), two52);
  }
  __device__ static u64 to_bits(double x) {
    return static_cast<u64>(__double_as_longlong(__dadd_rn(x, two52)) ^ two52_bits);
  }
  __device__ Value from_word(u64 x) const { return from_bits(x); }
  // The integer nearest to x q^-1.
  __device__ double quotient(double x) const { return __dsub_rn(__fma_rn(x, q_inverse, round_shift), round_shift); }
  // x w minus a multiple of q, within 0.63 q of zero.
  __device__ double mul_reduce(double x, double w) const {
    const double h = __dmul_rn(x, w);
    const double l = __fma_rn(x, w, -h);  // x w - h, exact
    return __dadd_rn(__fma_rn(-quotient(h), q, h), l);
  }
  __device__ void forward(Value& x, Value& y, Twiddle w) const {
    const double v = mul_reduce(y, w);
    y = __dsub_rn(x, v);
    x = __dadd_rn(x, v);
  }
  __device__ void inverse(Value& x, Value& y, Twiddle w) const {
    const double difference = __dsub_rn(x, y);
    x = __dadd_rn(x, y);
    y = mul_reduce(difference, w);
  }
  // x minus the nearest multiple of q: within 0.51 q of zero.
  __device__ void settle(Value& x) const { x = __fma_rn(-quotient(x), q, x); }
  // The canonical residue of an integer-valued x (|x| < 2^49).
  __device__ u64 canonical(double x) const {
    double r = __fma_rn(-quotient(x), q, x);  // within 0.51 q of zero
    if (r < 0) r = __dadd_rn(r, q);
    return to_bits(r);
  }
  __device__ u64 forward_word(Value v) const { return canonical(v); }
  __device__ u64 forward_inter(Value v) const { return canonical(v); }
  __device__ u64 inverse_inter(Value v) const { return canonical(v); }
  __device__ u64 times_inv_n(Value v) const { return canonical(mul_reduce(v, inv_n)); }
};

// Calls f(IntArith) or f(FpArith) for key limb `limb`: a uniform branch when
// the limb is uniform over the warp.
template <class F>
__device__ __forceinline__ void with_arith(const NttTables& t, int limb, F&& f) {
  const DevPrime& p = t.primes[limb];
  if (p.value < t.fp_limit) {
    f(FpArith(p));
  } else {
    f(IntArith(p));
  }
}

}  // namespace fhelium::cuda::ntt
