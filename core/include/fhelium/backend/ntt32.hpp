// The negacyclic NTT in 32-bit words, for the 32-bit word family: the same
// transform as NttTable (same root psi, same output order: index i holds the
// evaluation at psi^(2 bitrev(i) + 1)), so both give the same residues for
// the same prime. Primes below 2^31: below 2^30 the lazy butterflies keep
// values below 4q < 2^32; from 2^30 below q (the AVX2 path's forward: 2q).
// The AVX2 path works on eight lanes and is bit-identical to the scalar one.
#pragma once

#include <cstdint>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/backend/ntt.hpp"

namespace fhelium {

class NttTable32 {
 public:
  static constexpr u32 max_modulus = u32{1} << 31;  // exclusive

  // q: a prime below 2^31 with q = 1 mod 2 * ring_degree (else ParameterError).
  NttTable32(std::uint64_t ring_degree, u32 q);
  // The 32-bit tables of a 64-bit table's prime (below 2^31).
  explicit NttTable32(const NttTable& wide);

  std::uint64_t ring_degree() const { return n_; }
  u32 modulus() const { return q_; }
  u32 psi() const { return psi_; }

  // In place; inputs in [0, q), outputs in [0, q). AVX2 when the CPU has it.
  void forward(u32* values) const;
  void inverse(u32* values) const;
  // The portable path (bit-identical; tests compare the two).
  void forward_scalar(u32* values) const;
  void inverse_scalar(u32* values) const;

  // Tables in the order the kernels read them (shared with device backends).
  const std::vector<u32>& roots() const { return roots_; }
  const std::vector<u32>& roots_shoup() const { return roots_shoup_; }
  const std::vector<u32>& inverse_roots() const { return inv_roots_; }
  const std::vector<u32>& inverse_roots_shoup() const { return inv_roots_shoup_; }
  u32 inverse_n() const { return inv_n_; }
  u32 inverse_n_shoup() const { return inv_n_shoup_; }

 private:
  std::uint64_t n_;
  int log_n_;
  u32 q_;
  u32 psi_;
  std::vector<u32> roots_, roots_shoup_, inv_roots_, inv_roots_shoup_;
  u32 inv_n_, inv_n_shoup_;
};

}  // namespace fhelium
