// The AVX2 passes of the 32-bit NTT (ntt32_avx2.cpp).
#pragma once

#include <cstdint>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail {

// Below this the scalar transform runs (the vector passes need butterfly
// distances of at least 8 lanes on each side of the scalar middle).
inline constexpr std::uint64_t min_avx2_ring_degree32 = 64;

void forward_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q);
void inverse_avx2(u32* a, std::uint64_t n, const u32* roots, const u32* roots_shoup, u32 q, u32 inv_n, u32 inv_n_shoup);

}  // namespace fhelium::detail
