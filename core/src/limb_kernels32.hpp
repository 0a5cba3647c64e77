// The AVX2 kernel behind the 32-bit multiply_accumulate (limb_kernels.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fhelium/backend/modarith.hpp"

namespace fhelium::detail {

// n a multiple of 8; call only where the CPU has AVX2.
void multiply_accumulate_avx2(const u32* const* x, const u32* const* kb, const u32* const* ka, int digits,
                              const std::uint32_t* perm, std::size_t n, const NarrowModulus& q, u32* acc0, u32* acc1);

}  // namespace fhelium::detail
