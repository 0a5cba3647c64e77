// Hybrid key switching on the CPU: ModUp, inner product with the key, ModDown.
#pragma once

#include <cstdint>

#include "cpu_types.hpp"

namespace fhelium::cpu {

// W: the stored word (u64, or u32 for the 32-bit family); every function is
// instantiated for both.

// Extends d (NTT domain, the level's Q limbs) digit by digit to Q_level and P;
// the result stays in the context's workspace (all digits). With `perm` (the
// NTT-order permutation of X -> X^g) it extends d's automorphism.
template <class W>
void mod_up(const CpuContext& ctx, const W* d, int level, std::uint32_t galois_element = 0,
            const std::uint32_t* perm = nullptr);

// mod_up then inner_product. With 64-bit words, one prime per digit and N <= 2^14 the
// extended digits are never stored: one key slot at a time, each digit's limb
// is converted, transformed and multiplied into the slot's 128-bit sums while
// it is in cache.
// With `perm` (the NTT-order permutation of X -> X^g, g = galois_element)
// the product is that of d's automorphism: ModUp commutes with it, so d's
// coefficients are rotated once (fused path and 32-bit words) or the extended
// digits are read through perm (64-bit stored digits, the cuda backend's
// order); d itself is never permuted.
template <class W>
void mod_up_inner_product(const CpuContext& ctx, const W* d, int level, const KeyArg& key,
                          std::uint32_t galois_element = 0, const std::uint32_t* perm = nullptr);

// Workspace accumulators = sum over digits of extended_j (read through
// `perm`, an NTT-order automorphism, when not null) times the key's digit j.
template <class W>
void inner_product(const CpuContext& ctx, int level, const KeyArg& key, const std::uint32_t* perm);

// to += from, both in the workspace accumulators' layout (2 x (Q_l + P) x
// N): a sum of key switches before its one ModDown (rotate_sum).
template <class W>
void add_accumulators(const CpuContext& ctx, int level, const W* from, W* to);

// out_c = ModDown(accumulator_c) + add_c (add_c may be null), c = 0, 1;
// out and add have the level's Q limbs.
template <class W>
void mod_down_add(const CpuContext& ctx, int level, W* out0, const W* add0, W* out1, const W* add1);

}  // namespace fhelium::cpu
