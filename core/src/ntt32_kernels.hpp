// The AVX2 passes of the 32-bit NTT (ntt32_avx2.cpp).
#pragma once

#include <cstdint>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail {

// Below this the scalar transform runs (the vector passes need butterfly
// distances of at least 8 lanes on each side of the scalar middle).
inline constexpr std::uint64_t min_avx2_ring_degree32 = 64;

// Primes from here up to 2^31 keep tighter bounds (values below 2q in the
// forward transform, below q in the inverse), so that sums fit 32 bits.
inline constexpr u32 lazy_modulus_limit32 = u32{1} << 30;

void forward_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q);
void inverse_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q, u32 inv_n, u32 inv_n_shoup);

// Residues below 2^32 between 64-bit and 32-bit words; n a multiple of 8.
void narrow_words_avx2(const u64* in, u32* out, std::uint64_t n);
void widen_words_avx2(const u32* in, u64* out, std::uint64_t n);

}  // namespace fhelium::detail
