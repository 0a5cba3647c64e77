// Plain structs of the 32-bit word family's tables as the kernels read them
// (device pointers), shared by host code and kernels.
#pragma once

#include <cstdint>

#include "device_types.hpp"

namespace fhelium::cuda::narrow {

// A prime below 2^31 with the constants of NarrowModulus (core): a 64-bit
// sum is reduced in 32-bit multiplies.
struct Prime {
  u32 q;
  u32 two32;  // 2^32 mod q
  u32 two32_shoup;
  u32 one_shoup;  // floor(2^32 / q)
};

// A BasisConverter (A -> B) in 32-bit words, the cpu's narrow path.
struct ConverterView {
  int from_count;                // |A|
  int to_count;                  // |B|
  const Prime* from;             // a_i
  const Prime* to;               // b_j
  const u32* hat_inverse;        // [(A/a_i)^-1]_{a_i} (times a constant, for a rescale)
  const u32* hat_inverse_shoup;  // its Shoup constants
  const double* inverse_double;  // 1.0 / a_i
  const u32* hat_mod_to;         // [A/a_i]_{b_j} at j*|A|+i
  const u32* overflow_mod_to;    // [v A]_{b_j} at j*(|A|+1)+v
  // Bit i: a target's 64-bit sum of products is folded to h [2^32]_{b_j} + l
  // after source i's, where the next products would overflow it otherwise.
  u32 fold_after;
};

// The most primes a converter takes from (they sit in registers).
constexpr int max_from_primes = 16;
// The most limbs a polynomial has (per-limb constants travel by value).
constexpr int max_limbs = 64;

// One constant per limb and its Shoup constant, passed by value to a kernel.
struct LimbConstants {
  u32 w[max_limbs];
  u32 w_shoup[max_limbs];
};

}  // namespace fhelium::cuda::narrow
