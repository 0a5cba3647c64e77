// Helpers shared by the circuits. Not installed.
#pragma once

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits::detail {

// The factor a rescale at `level` divides the scale by (q_level with one
// prime per level).
double rescale_divisor(const runtime::ProgramBuilder& b, int level);

// v dropped to `level` (v itself when it is already there).
runtime::ValueRef at_level(runtime::ProgramBuilder& b, runtime::ValueRef v, int level);

// a and b are one scale up to the rounding of the doubles that carry it.
// Engine::add accepts scales 1e-9 apart (same_scale), but a value read at
// a scale 1e-9 off is off by as much: in EvalMod's Chebyshev powers such
// errors add up to a bias that SlotToCoeff gathers on slot 0. (align's
// multiply by 1 is itself rounded to an integer near q: off by up to
// 0.5 / q, 2^-62 on EvalMod's 61-bit primes, 2^-41 on 40-bit ones.)
bool exact_scale(double a, double b);

// ceil(log2(n)) for n >= 1.
int ceil_log2(std::size_t n);

bool is_power_of_two(std::size_t n);

}  // namespace fhelium::circuits::detail
