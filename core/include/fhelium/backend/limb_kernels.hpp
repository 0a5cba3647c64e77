// Loops over one limb (n residues modulo one prime) that backends share,
// vectorized with AVX2 where the CPU has it; the results do not depend on
// which path runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fhelium/backend/modarith.hpp"

namespace fhelium {

// out[k] = x[k] + y[k] / x[k] - y[k] mod q, for residues below q. out may
// alias x or y.
void add_residues(const u64* x, const u64* y, u64* out, std::size_t n, u64 q);
void subtract_residues(const u64* x, const u64* y, u64* out, std::size_t n, u64 q);

// out[k] = (t[k] mod q - c) mod q, for any t[k] < 2^62 and c < q.
void reduce_subtract(const u64* t, u64* out, std::size_t n, const Modulus& q, u64 c);

// out[k] = (x[k] - y[k]) w (+ add[k]) mod q, for x[k], y[k], add[k] < q and
// w_shoup = shoup(w, q); add may be null. out may alias any input.
void multiply_difference(const u64* x, const u64* y, u64* out, std::size_t n, u64 w, u64 w_shoup, u64 q,
                         const u64* add = nullptr);

// The centered lift of residues modulo a0 to b: out[k] = in[k] mod b, minus
// a0 when in[k] > (a0 - 1) / 2 (a0_mod_b = a0 mod b). Basis conversion from
// one prime.
void lift_centered(const u64* in, u64* out, std::size_t n, u64 a0, const Modulus& b, u64 a0_mod_b);

// out[k] = x[k] y[k] mod q, for x[k], y[k] < q. out may alias x or y.
void multiply_residues(const u64* x, const u64* y, u64* out, std::size_t n, const Modulus& q);

// out[k] = a0[k] b1[k] + a1[k] b0[k] mod q, for residues below q: the
// middle term of a ciphertext product.
void multiply_cross(const u64* a0, const u64* b1, const u64* a1, const u64* b0, u64* out, std::size_t n,
                    const Modulus& q);

// The same loops in 32-bit words (the 32-bit family's packed residues,
// primes below 2^31); the results equal the 64-bit loops' on the same values.
void add_residues(const u32* x, const u32* y, u32* out, std::size_t n, u32 q);
void subtract_residues(const u32* x, const u32* y, u32* out, std::size_t n, u32 q);
void multiply_residues(const u32* x, const u32* y, u32* out, std::size_t n, const NarrowModulus& q);
void multiply_cross(const u32* a0, const u32* b1, const u32* a1, const u32* b0, u32* out, std::size_t n,
                    const NarrowModulus& q);
void multiply_difference(const u32* x, const u32* y, u32* out, std::size_t n, u32 w, u32 w_shoup, u32 q,
                         const u32* add = nullptr);
// The key switch's inner product: acc0[k] = sum_j x_j[i] kb_j[k] and
// acc1[k] = sum_j x_j[i] ka_j[k] mod q over `digits` digits, i = perm[k]
// (an automorphism in NTT order) or k when perm is null.
void multiply_accumulate(const u32* const* x, const u32* const* kb, const u32* const* ka, int digits,
                         const std::uint32_t* perm, std::size_t n, const NarrowModulus& q, u32* acc0, u32* acc1);
// Its portable path (bit-identical; tests compare the two).
void multiply_accumulate_scalar(const u32* const* x, const u32* const* kb, const u32* const* ka, int digits,
                                const std::uint32_t* perm, std::size_t n, const NarrowModulus& q, u32* acc0, u32* acc1);

}  // namespace fhelium
