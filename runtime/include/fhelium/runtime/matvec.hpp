// y = A x for a square matrix by the cyclic-diagonal method with
// baby-step/giant-step rotations, as a Program. x is packed cyclically: its
// `size` entries repeat across the slots (size must divide the slot count),
// so a rotation of the packed vector is a cyclic rotation of x.
//
//   y = sum_g rotate( sum_b d'_{g,b} * rotate(x, b), g * baby )
//
// with the baby-step rotations hoisted (one ModUp) and the diagonals
// pre-rotated by -g * baby so that one giant-step rotation serves each group.
#pragma once

#include <complex>
#include <map>
#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::runtime {

struct MatvecPlan {
  int size = 0;   // matrix dimension
  int baby = 0;   // baby steps per group (hoisted rotations 1 .. baby-1)
  int giant = 0;  // groups (giant-step rotations by g * baby)
  // Every rotation step the program uses.
  std::vector<long> rotation_steps() const;
};

// baby = the power of two nearest sqrt(size); InvalidArgumentError unless
// size is a power of two between 1 and `slots`.
MatvecPlan plan_matvec(int size, std::size_t slots);

// The Program: input "x", constants "d<g>_<b>", output "y" (rescaled once).
Program matvec_program(const MatvecPlan& plan);

// The pre-rotated diagonals as clear slot values (Materials::constants).
std::map<std::string, std::vector<std::complex<double>>> matvec_constants(
    const MatvecPlan& plan, const std::vector<std::vector<double>>& matrix, std::size_t slots);

// x repeated to fill `slots` slots; y = A x in the clear (size entries).
std::vector<std::complex<double>> pack_cyclic(const std::vector<double>& x, std::size_t slots);
std::vector<double> clear_matvec(const std::vector<std::vector<double>>& matrix, const std::vector<double>& x);

}  // namespace fhelium::runtime
