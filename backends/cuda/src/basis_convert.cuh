// RNS basis conversion, bit-identical to BasisConverter: a single-prime
// source is lifted exactly (x - a_0 when x > (a_0 - 1) / 2); otherwise
// y_i = x_i [(A/a_i)^-1]_{a_i}, v = floor(sum_i double(y_i) / a_i + 0.5)
// summed in index order with no fused multiply-add, and
// out_j = sum_i y_i [A/a_i]_{b_j} - [v A]_{b_j} mod b_j (each product by
// Shoup's method; the sum is exact modulo b_j, so the bits are the CPU's).
//
// A block first stages the converter's constants in shared memory, then each
// thread converts one coefficient to every target. With 2 to 16 sources and
// every source and the target below fp_limit (2^44), the sum runs in double
// precision (ntt::FpArith: each product reduced exactly to within 0.63 b_j,
// the sum brought to its canonical residue): the same residue, about half
// the instructions of the 64-bit Shoup products.
#pragma once

#include "device_types.hpp"
#include "modarith.cuh"
#include "ntt_arith.cuh"

namespace fhelium::cuda {

// Shared-memory words of a converter: from_value, hat_inverse,
// hat_inverse_shoup, inverse_double_bits (|A| each), then per target j:
// value, floor(2^64 / b_j), hat[|A|], hat_shoup[|A|], overflow[|A| + 1].
// A target on the double-precision path (fp_target) has the bits of the
// double 1 / b_j instead of floor(2^64 / b_j), the hats as doubles
// instead of their Shoup constants, and -overflow[v] as doubles (the sum
// starts there, so no subtraction modulo b_j follows).
__host__ __device__ constexpr int converter_target_words(int na) { return 3 * na + 3; }
__host__ __device__ constexpr int converter_smem_words(int na, int nb) {
  return 4 * na + nb * converter_target_words(na);
}

// Whether the sources allow the double-precision sum (reads the staged values).
__device__ __forceinline__ bool fp_sources(const u64* from_value, int na, u64 fp_limit) {
  if (na < 2 || na > 16) return false;
  for (int i = 0; i < na; ++i) {
    if (from_value[i] >= fp_limit) return false;
  }
  return true;
}

__device__ __forceinline__ double double_bits(u64 x) { return __longlong_as_double(static_cast<long long>(x)); }
__device__ __forceinline__ u64 bits_of(double x) { return static_cast<u64>(__double_as_longlong(x)); }

__device__ __forceinline__ void stage_converter(const ConverterView& v, const DevPrime* primes, u64* sm,
                                                u64 fp_limit) {
  const int na = v.from_count;
  const int nb = v.to_count;
  const bool fp = fp_sources(v.from_value, na, fp_limit);
  // Target j takes the double-precision path (see convert_sources).
  const auto fp_target = [&](int j) { return fp && primes[v.to_key_limb[j]].value < fp_limit; };
  const int per = converter_target_words(na);
  const int step = static_cast<int>(blockDim.x);
  for (int i = static_cast<int>(threadIdx.x); i < na; i += step) {
    sm[i] = v.from_value[i];
    sm[na + i] = v.hat_inverse[i];
    sm[2 * na + i] = v.hat_inverse_shoup[i];
    sm[3 * na + i] = v.inverse_double_bits[i];
  }
  u64* targets = sm + 4 * na;
  for (int j = static_cast<int>(threadIdx.x); j < nb; j += step) {
    const DevPrime& p = primes[v.to_key_limb[j]];
    targets[j * per] = p.value;
    targets[j * per + 1] = fp_target(j) ? p.inverse_bits : p.ratio_hi;  // 1 / b_j as a double
  }
  for (int k = static_cast<int>(threadIdx.x); k < nb * na; k += step) {
    const int j = k / na;
    const int i = k % na;
    targets[j * per + 2 + i] = v.hat_mod_to[k];
    targets[j * per + 2 + na + i] =
        fp_target(j) ? bits_of(ntt::FpArith::from_bits(v.hat_mod_to[k])) : v.hat_mod_to_shoup[k];
  }
  for (int k = static_cast<int>(threadIdx.x); k < nb * (na + 1); k += step) {
    const int j = k / (na + 1);
    const u64 overflow = v.overflow_mod_to[k];
    targets[j * per + 2 + 2 * na + k % (na + 1)] =
        fp_target(j) ? bits_of(-ntt::FpArith::from_bits(overflow)) : overflow;
  }
}

// convert_staged for |A| = `na` >= 2 sources; EXACT: na == MAX_FROM, so no
// source index is guarded at run time.
template <int MAX_FROM, int C, bool EXACT, class Out>
__device__ __forceinline__ void convert_sources(const u64* sm, int na, int nb, const u64* const (&in)[C], u32 n,
                                                u64 fp_limit, Out out) {
  if constexpr (EXACT) na = MAX_FROM;
  const auto has = [na](int i) { return EXACT || i < na; };
  const int per = converter_target_words(na);
  const u64* targets = sm + 4 * na;
  u64 r[C];
  u64 y[C][MAX_FROM];
  int count[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    double overflow = 0.0;
#pragma unroll
    for (int i = 0; i < MAX_FROM; ++i) {
      if (has(i)) {
        y[c][i] = mul_shoup(in[c][static_cast<std::size_t>(i) * n], sm[na + i], sm[2 * na + i], sm[i]);
        const double inverse = __longlong_as_double(static_cast<long long>(sm[3 * na + i]));
        overflow = __dadd_rn(overflow, __dmul_rn(__ull2double_rn(y[c][i]), inverse));
      }
    }
    count[c] = static_cast<int>(__double2ull_rz(__dadd_rn(overflow, 0.5)));
  }
  constexpr bool fp_possible = MAX_FROM <= 16;  // the double copies of y stay in registers
  const bool fp = fp_possible && fp_sources(sm, na, fp_limit);
  double yd[C][fp_possible ? MAX_FROM : 1];
  if constexpr (fp_possible) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
      for (int i = 0; i < MAX_FROM; ++i) yd[c][i] = has(i) ? ntt::FpArith::from_bits(y[c][i]) : 0.0;
    }
  }
  for (int j = 0; j < nb; ++j) {
    const u64* t = targets + j * per;
    const u64 b = t[0];
    if constexpr (fp_possible) {
      if (fp && b < fp_limit) {
        const ntt::FpArith a(ntt::FpArith::from_bits(b), double_bits(t[1]));
#pragma unroll
        for (int c = 0; c < C; ++c) {
          // Starts at -[v A]_b (staged as a double), then within 0.63 b of it
          // per source: below 2^48 in magnitude, an exact integer throughout.
          double sum = double_bits(t[2 + 2 * na + count[c]]);
#pragma unroll
          for (int i = 0; i < MAX_FROM; ++i) {
            if (has(i)) sum = __dadd_rn(sum, a.mul_reduce(yd[c][i], double_bits(t[2 + na + i])));
          }
          r[c] = a.canonical(sum);
        }
        out(j, r);
        continue;
      }
    }
    const u64 two_b = 2 * b;
    u64 sum[C];
#pragma unroll
    for (int c = 0; c < C; ++c) sum[c] = 0;
#pragma unroll
    for (int i = 0; i < MAX_FROM; ++i) {
      if (has(i)) {
        const u64 hat = t[2 + i];
        const u64 hat_shoup = t[2 + na + i];
#pragma unroll
        for (int c = 0; c < C; ++c) {
          sum[c] += mul_shoup_lazy(y[c][i], hat, hat_shoup, b);  // < 2b
          sum[c] = sum[c] >= two_b ? sum[c] - two_b : sum[c];    // < 2b (4b < 2^64)
        }
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const u64 v = sum[c] >= b ? sum[c] - b : sum[c];
      r[c] = sub_mod(v, t[2 + 2 * na + count[c]], b);
    }
    out(j, r);
  }
}

// convert_staged for one source (alpha = 1): each target's residue is the
// centered lift of x, x mod b_j minus [a_0]_{b_j} when x > (a_0 - 1) / 2.
template <int C, class Out>
__device__ __forceinline__ void convert_one_source(const u64* sm, int nb, const u64* const (&in)[C], Out out) {
  const int per = converter_target_words(1);
  const u64* targets = sm + 4;
  u64 x[C];
  bool negative[C];
  const u64 a0 = sm[0];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    x[c] = in[c][0];
    negative[c] = x[c] > (a0 - 1) / 2;
  }
#pragma unroll 2
  for (int j = 0; j < nb; ++j) {
    const u64* t = targets + j * per;
    const u64 b = t[0];
    const u64 ratio = t[1];
    const u64 lifted = t[5];  // [a_0]_{b_j}
    u64 r[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      u64 v = x[c] - __umul64hi(x[c], ratio) * b;  // x mod b: floor(2^64 / b) is at most one short
      v = v >= b ? v - b : v;
      r[c] = negative[c] ? sub_mod(v, lifted, b) : v;
    }
    out(j, r);
  }
}

// Converts C coefficients per thread (sharing each staged constant): in[c]
// points at coefficient c in source limb 0 (limb stride n); out(j, r) receives
// the C residues modulo target j. MAX_FROM bounds |A| at compile time (the
// source words stay in registers).
template <int MAX_FROM, int C, class Out>
__device__ __forceinline__ void convert_staged(const u64* sm, int na, int nb, const u64* const (&in)[C], u32 n,
                                               u64 fp_limit, Out out) {
  if (na == 1) {
    convert_one_source<C>(sm, nb, in, out);
    return;
  }
  if constexpr (MAX_FROM <= 16) {
    if (na == MAX_FROM) {
      convert_sources<MAX_FROM, C, true>(sm, na, nb, in, n, fp_limit, out);
      return;
    }
  }
  convert_sources<MAX_FROM, C, false>(sm, na, nb, in, n, fp_limit, out);
}

}  // namespace fhelium::cuda
