// The encoder's special FFT as sparse matrices: CoeffToSlot and SlotToCoeff
// of bootstrapping.
//
// For n slots of ring degree N, a plaintext with coefficients c has the
// slots z = U0 w, w_k = c_(k*g) + i c_(N/2 + k*g) (g = N / 2n), and the
// encoder computes U0 w as log2(n) butterfly stages after a bit reversal:
// z = S_n ... S_4 S_2 R w. Each stage S_len has at most three non-zero
// diagonals (0, +len/2, -len/2), and so has each inverse stage. A group of
// consecutive stages is one linear transform (one level) with at most
// 2^(stages + 1) - 1 diagonals: CoeffToSlot computes R w from z with the
// inverse stages in groups, SlotToCoeff z from R w; the bit reversal is never
// computed, because what lies between them (EvalMod) works slot by slot.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

using runtime::Slots;

// Diagonal index in [0, n) -> n values: (M v)[x] = sum_k M_k[x] v[(x + k) mod n].
using Diagonals = std::map<long, Slots>;

// S_len of the special FFT for n slots (len = 2, 4, ..., n).
Diagonals special_fft_stage(std::size_t ring_degree, std::size_t slots, std::size_t len);
// S_len^-1.
Diagonals special_fft_inverse_stage(std::size_t ring_degree, std::size_t slots, std::size_t len);

// The product `after` x `before` (before is applied first).
Diagonals compose(const Diagonals& after, const Diagonals& before, std::size_t slots);
// Every diagonal times `factor`.
Diagonals scaled(Diagonals m, std::complex<double> factor);

// R U0^-1 as `groups` matrices applied in order (the first holds the
// largest stages), the first multiplied by `factor`. 1 <= groups <= log2(n).
std::vector<Diagonals> coeff_to_slot_matrices(std::size_t ring_degree, std::size_t slots, int groups,
                                              std::complex<double> factor = 1.0);
// U0 R as `groups` matrices applied in order (the first holds the smallest
// stages), the first multiplied by `factor`.
std::vector<Diagonals> slot_to_coeff_matrices(std::size_t ring_degree, std::size_t slots, int groups,
                                              std::complex<double> factor = 1.0);

}  // namespace fhelium::circuits
