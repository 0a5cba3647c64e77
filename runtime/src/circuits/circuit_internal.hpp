// Helpers shared by the circuits. Not installed.
#pragma once

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits::detail {

// The factor a rescale at `level` divides the scale by (q_level with one
// prime per level).
double rescale_divisor(const runtime::ProgramBuilder& b, int level);

// v dropped to `level` (v itself when it is already there).
runtime::ValueRef at_level(runtime::ProgramBuilder& b, runtime::ValueRef v, int level);

// ceil(log2(n)) for n >= 1.
int ceil_log2(std::size_t n);

bool is_power_of_two(std::size_t n);

}  // namespace fhelium::circuits::detail
