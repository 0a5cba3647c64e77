// Basis conversion when every prime is below 2^31 (the 32-bit word family):
// sums of 32-bit products in 64-bit words, blocks of coefficients limb by
// limb. The AVX2 kernel and the portable one give the same residues as
// BasisConverter's 128-bit path.
#pragma once

#include <cstddef>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail {

constexpr std::size_t narrow_max_from_primes = 60;
constexpr std::size_t narrow_block = 64;  // coefficients per block

// The converter's tables (see BasisConverter), for primes below 2^31.
struct NarrowConversion {
  const NarrowModulus* from = nullptr;
  std::size_t from_count = 0;
  const NarrowModulus* to = nullptr;
  const u32* hat_inverse = nullptr;        // [(A/a_i)^-1]_{a_i}
  const u32* hat_inverse_shoup = nullptr;
  const u32* hat_mod_to = nullptr;         // [A/a_i]_{b_j} at j * |A| + i
  const double* inverse_as_double = nullptr;
  const u64* overflow_mod_to = nullptr;    // [v A]_{b_j} at j * (|A| + 1) + v
};

// Coefficients [begin, end) of targets [first_target, end_target), written
// to consecutive limbs of out (limb stride n), in 64-bit or 32-bit words.
void convert_narrow_scalar(const NarrowConversion& c, const u64* in, u64* out, std::size_t n, std::size_t begin,
                           std::size_t end, std::size_t first_target, std::size_t end_target);
void convert_narrow_scalar(const NarrowConversion& c, const u32* in, u32* out, std::size_t n, std::size_t begin,
                           std::size_t end, std::size_t first_target, std::size_t end_target);
// The same, four coefficients per instruction (the last (end - begin) % 4
// by the scalar kernel). Call only where the CPU has AVX2.
void convert_narrow_avx2(const NarrowConversion& c, const u64* in, u64* out, std::size_t n, std::size_t begin,
                         std::size_t end, std::size_t first_target, std::size_t end_target);
void convert_narrow_avx2(const NarrowConversion& c, const u32* in, u32* out, std::size_t n, std::size_t begin,
                         std::size_t end, std::size_t first_target, std::size_t end_target);

}  // namespace fhelium::detail
