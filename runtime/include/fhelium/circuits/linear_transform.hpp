// y = M x by the diagonal method with baby-step giant-step rotations.
//
// Vectors are packed with a period d (a power of two dividing the slot
// count): x's entries, zeros up to d, repeated over all slots, so a rotation
// of the slots is a cyclic rotation of x. Diagonal k of the d x d matrix is
// diag_k[i] = M[i][(i + k) mod d]; with k = g + j (g a giant step, a multiple
// of the baby step n1, and j < n1):
//
//   y = sum_g rotate( sum_j rotate(diag_{g+j}, -g) * rotate(x, j), g )
//
// The baby rotations of x are hoisted (one decomposition of x for all of
// them); the diagonals are pre-rotated by -g so that one giant rotation
// serves each group. Zero diagonals are skipped, and n1 is chosen for the
// given set of diagonals to minimise the rotations (baby + giant, each a key
// switch; on a tie, fewer giant ones, which are not hoisted).
//
// Levels and scale: one level. The diagonals are constants encoded at x's
// level with scale q_level, so the single rescale at the end returns exactly
// x's scale.
#pragma once

#include <complex>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

using runtime::ProgramBuilder;
using runtime::Slots;
using runtime::ValueRef;

class LinearTransform {
 public:
  // A rows x cols matrix (every row the same length) on vectors of period
  // d = the next power of two >= max(rows, cols), at most `slots`: x holds
  // its cols entries in slots 0..cols-1 of each period, y its rows entries.
  static LinearTransform from_matrix(const std::vector<std::vector<double>>& matrix, std::size_t slots);
  static LinearTransform from_matrix(const std::vector<Slots>& matrix, std::size_t slots);
  // Diagonals by index k in [0, period) (negative k is read modulo period),
  // each `period` values; period a power of two dividing `slots`.
  static LinearTransform from_diagonals(std::map<long, Slots> diagonals, std::size_t period, std::size_t slots);

  std::size_t period() const { return period_; }
  std::size_t slots() const { return slots_; }
  // The non-zero diagonals' indices, in [0, period).
  std::vector<long> diagonal_indices() const;
  long baby_step() const { return baby_; }  // n1
  // Non-zero rotation steps: the hoisted baby ones and the giant ones.
  std::vector<long> baby_steps() const;
  std::vector<long> giant_steps() const;
  // Every rotation key apply() needs (the union), and their count.
  std::vector<long> rotation_steps() const;
  std::size_t key_switches() const { return baby_steps().size() + giant_steps().size(); }

  // y = M x. Constants are named from `name` ("<name>_<k>"). One level;
  // the result has x's scale exactly.
  ValueRef apply(ProgramBuilder& b, ValueRef x, const std::string& name = "diag") const;

  // The same product on clear slots (x of `slots` values, packed).
  Slots apply_clear(const Slots& x) const;
  // x repeated with this transform's period over all slots.
  Slots pack(const Slots& x) const;

 private:
  LinearTransform(std::map<long, Slots> diagonals, std::size_t period, std::size_t slots);
  Slots pre_rotated(long k, long giant) const;

  std::map<long, Slots> diagonals_;  // non-zero ones only
  std::size_t period_ = 0;
  std::size_t slots_ = 0;
  long baby_ = 1;
};

// The n1 that minimises baby + giant rotations for a set of diagonal indices
// in [0, period) (ties: fewer giant rotations, then the smaller n1).
long best_baby_step(const std::vector<long>& diagonals, std::size_t period);

}  // namespace fhelium::circuits
