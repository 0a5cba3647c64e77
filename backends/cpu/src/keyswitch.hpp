// Hybrid key switching on the CPU: ModUp, inner product with the key, ModDown.
#pragma once

#include <cstdint>

#include "cpu_types.hpp"

namespace fhelium::cpu {

// Extends d (NTT domain, the level's Q limbs) digit by digit to Q_level and P;
// the result stays in the context's workspace (all digits).
void mod_up(const CpuContext& ctx, const u64* d, int level);

// mod_up then inner_product. With one prime per digit and N <= 2^14 the
// extended digits are never stored: one key slot at a time, each digit's limb
// is converted, transformed and multiplied into the slot's 128-bit sums while
// it is in cache.
// With `perm` (the NTT-order permutation of X -> X^g, g = galois_element)
// the product is that of d's automorphism: ModUp commutes with it, so d's
// coefficients are rotated once (fused path) or the extended digits are read
// through perm (stored digits); d itself is never permuted.
void mod_up_inner_product(const CpuContext& ctx, const u64* d, int level, const KeyArg& key,
                          std::uint32_t galois_element = 0, const std::uint32_t* perm = nullptr);

// Workspace accumulators = sum over digits of extended_j (read through
// `perm`, an NTT-order automorphism, when not null) times the key's digit j.
void inner_product(const CpuContext& ctx, int level, const KeyArg& key, const std::uint32_t* perm);

// out_c = ModDown(accumulator_c) + add_c (add_c may be null), c = 0, 1;
// out and add have the level's Q limbs.
void mod_down_add(const CpuContext& ctx, int level, u64* out0, const u64* add0, u64* out1, const u64* add1);

}  // namespace fhelium::cpu
