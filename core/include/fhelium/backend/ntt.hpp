// Negacyclic number-theoretic transform for one prime (Harvey's lazy
// butterflies with Shoup constants). Output order: index i holds the
// evaluation at psi^(2 bitrev(i) + 1).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fhelium/backend/modarith.hpp"

namespace fhelium {

class NttTable32;

class NttTable {
 public:
  NttTable(std::uint64_t ring_degree, const Modulus& modulus);

  std::uint64_t ring_degree() const { return n_; }
  const Modulus& modulus() const { return modulus_; }
  u64 psi() const { return psi_; }

  // In place; inputs in [0, q), outputs in [0, q). Uses AVX2 when the CPU
  // has it: for primes below 2^31 the 32-bit transform (NttTable32, eight
  // lanes), below 2^44 the double-precision one (with FMA).
  void forward(u64* values) const;
  void inverse(u64* values) const;
  // The same in 32-bit words (the 32-bit family's packed residues), for
  // primes below 2^31 only (else InvalidArgumentError).
  void forward(u32* values) const;
  void inverse(u32* values) const;
  // The portable path (bit-identical; tests compare the two).
  void forward_scalar(u64* values) const;
  void inverse_scalar(u64* values) const;

  // Whether forward/inverse take the double-precision path (about twice as
  // fast as the integer one).
  bool floating_point() const { return !roots_double_.empty(); }

  // Tables in the order the kernels read them (shared with device backends).
  const std::vector<u64>& roots() const { return roots_; }
  const std::vector<u64>& roots_shoup() const { return roots_shoup_; }
  const std::vector<u64>& inverse_roots() const { return inv_roots_; }
  const std::vector<u64>& inverse_roots_shoup() const { return inv_roots_shoup_; }
  u64 inverse_n() const { return inv_n_; }
  u64 inverse_n_shoup() const { return inv_n_shoup_; }

 private:
  const NttTable32& narrow_table() const;

  std::uint64_t n_;
  int log_n_;
  Modulus modulus_;
  u64 psi_;
  std::vector<u64> roots_, roots_shoup_, inv_roots_, inv_roots_shoup_;
  u64 inv_n_, inv_n_shoup_;
  // The roots as doubles, for the floating-point path (primes below 2^44 on
  // CPUs with AVX2 and FMA); empty otherwise.
  std::vector<double> roots_double_, inv_roots_double_;
  // The 32-bit transform of a prime below 2^31; null otherwise. The 64-bit
  // calls go through it where it has AVX2 (N >= 64).
  std::shared_ptr<const NttTable32> narrow_;
  bool narrow_for_wide_words_ = false;
};

std::uint32_t bit_reverse(std::uint32_t x, int bits);

}  // namespace fhelium
