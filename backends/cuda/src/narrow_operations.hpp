// The 32-bit word family's multi-kernel operations on the GPU: transforms of
// a value, rescale by a level of several primes, and hybrid key switching in
// three steps, each the cpu backend's 32-bit path in the same order (so the
// residues are the same). mod_down_rescale has no such path: it reorders
// ModDown then rescale by exact modular identities, so its residues are
// theirs too.
#pragma once

#include "narrow_tables.hpp"

namespace fhelium::cuda::narrow {

// Where an operation runs: the context's tables, the stream and N.
struct Site {
  const Tables& tables;
  cudaStream_t stream;
  u32 n;
  // The workspace of the operation's key-switching lane; null for an
  // operation that is not a key switch (it may run on any capture lane).
  const Tables::Workspace* work;
};

// out = a in the NTT (coefficient) domain; a and out at `level`.
void to_ntt(const Site& s, int level, Poly out, Poly a);
void to_coefficient(const Site& s, int level, Poly out, Poly a);

// out (level - 1) = round(a A / D) (RescaleLevel).
void rescale(const Site& s, int level, Poly out, Poly a);

// ModUp: d (the level's Q limbs, NTT domain) extended digit by digit to the
// level's primes and P, in the tables' workspace. With a Galois element g,
// that of d(X^g) (the coefficients are rotated before the conversion).
void mod_up(const Site& s, int level, const u32* d, u32 galois_element);
// The workspace's accumulators = sum over digits of extended_j times the
// key's digit j, the extended limbs read through X -> X^g when g is not 0.
void inner_product(const Site& s, int level, const u32* key, u32 galois_element);
// out_c = ModDown(accumulator_c) + add_c for c = 0, 1 (add_c may be null;
// add_0 is read through X -> X^g when add0_galois is not 0).
void mod_down(const Site& s, int level, u32* out0, const u32* add0, u32 add0_galois, u32* out1, const u32* add1);
// out (level - 1) = the rescale of (ModDown(accumulator_c) + add_c) for
// c = 0, 1, add at `level`: ModDown takes the rescale, so the kept limbs
// take one forward transform (RescaleTables::fuses_key_switch).
void mod_down_rescale(const Site& s, int level, Poly out, Poly add);

}  // namespace fhelium::cuda::narrow
