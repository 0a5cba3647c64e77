// Exact RNS basis conversion from basis A to basis B (centered lift).
//
// For x given by residues in A, computes [x']_b for every b in B where x' is
// the representative of x in (-A/2, A/2]. The overflow count v is rounded
// from a double sum (Halevi-Polyakov-Shoup); the sum is taken in a fixed
// order with no fused multiply-add so every backend gets the same bits. The
// result is exact except within about |A| 2^-52 A of the boundary A/2, where
// the rounding may pick the other representative (off by A). A single-prime
// basis A = a_0 is lifted exactly with an integer comparison. When every
// prime of A and B is below 2^31 (the 32-bit word family) the sums are taken
// in 64-bit words with 32-bit products, blocks of coefficients at a time
// (vectorized with AVX2): the same residues.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "fhelium/backend/modarith.hpp"

namespace fhelium {

class BasisConverter {
 public:
  BasisConverter(std::vector<Modulus> from, std::vector<Modulus> to);

  const std::vector<Modulus>& from() const { return from_; }
  const std::vector<Modulus>& to() const { return to_; }

  // `in`: |A| limbs of n coefficients (coefficient domain), limb stride n.
  // `out`: |B| limbs of n coefficients. Coefficients [begin, end) only.
  void convert(const u64* in, u64* out, std::size_t n, std::size_t begin, std::size_t end) const;
  // Target `target` only: `out` is one limb of n coefficients. The same
  // residues as convert(); a fused key switch converts one target at a time.
  void convert_one(const u64* in, u64* out, std::size_t n, std::size_t target, std::size_t begin,
                   std::size_t end) const;

  // The same in 32-bit words, for bases of primes below 2^31 only (else
  // InvalidArgumentError).
  void convert(const u32* in, u32* out, std::size_t n, std::size_t begin, std::size_t end) const;
  void convert_one(const u32* in, u32* out, std::size_t n, std::size_t target, std::size_t begin,
                   std::size_t end) const;

  // convert() on the portable path only (bit-identical; tests compare the two).
  void convert_scalar(const u64* in, u64* out, std::size_t n, std::size_t begin, std::size_t end) const;

  // Constants, as device backends read them.
  const std::vector<u64>& hat_inverse() const { return hat_inv_; }  // [(A/a_i)^-1]_{a_i}
  const std::vector<u64>& hat_inverse_shoup() const { return hat_inv_shoup_; }
  const std::vector<double>& inverse_as_double() const { return inv_double_; }  // 1.0 / a_i
  const std::vector<u64>& hat_mod_to() const { return hat_mod_to_; }            // [A/a_i]_{b_j} at j*|A|+i
  const std::vector<u64>& product_mod_to() const { return prod_mod_to_; }       // [A]_{b_j}
  const std::vector<u64>& overflow_mod_to() const { return overflow_mod_to_; }  // [v A]_{b_j} at j*(|A|+1)+v

 private:
  // Tables of the path for primes below 2^31.
  struct Narrow {
    std::vector<NarrowModulus> from, to;
    std::vector<u32> hat_inverse, hat_inverse_shoup;  // as hat_inv_, in 32-bit words
    std::vector<u32> hat_mod_to;                      // as hat_mod_to_
  };
  // Targets [first_target, end_target) into consecutive limbs of out; AVX2
  // where `vector` and the CPU has it.
  template <class W>
  void convert_narrow(const W* in, W* out, std::size_t n, std::size_t begin, std::size_t end, std::size_t first_target,
                      std::size_t end_target, bool vector) const;

  // y_i = [x_i (A/a_i)^-1]_{a_i} of coefficient k, and the overflow count v.
  u64 scaled_residues(const u64* in, std::size_t n, std::size_t k, u64* y) const;
  // [sum_i y_i (A/a_i) - v A]_{b_target}.
  u64 combine(const u64* y, u64 v, std::size_t target) const;

  std::vector<Modulus> from_, to_;
  std::vector<u64> hat_inv_, hat_inv_shoup_, hat_mod_to_, prod_mod_to_;
  std::vector<u64> overflow_mod_to_;  // [v A]_{b_j} at j * (|A| + 1) + v
  std::vector<double> inv_double_;
  std::optional<Narrow> narrow_;
};

}  // namespace fhelium
