// y = M x by the diagonal method with baby-step giant-step rotations.
//
// Vectors are packed with a period (a power of two dividing the slot count):
// x's entries, zeros up to the period, repeated over all slots, so a rotation
// of the slots is a cyclic rotation of x. A rows x cols matrix reads x with
// the input period px = next_pow2(cols) and writes y with the output period
// py = next_pow2(rows); its diagonal k (0 <= k < px) holds, in slot j,
// M[j mod py][(j + k) mod px]. With k = g + j (g a multiple of the baby step
// n1, j < n1):
//
//   y = sum_g rotate( sum_j rotate(diag_{g+j}, -g) * rotate(x, j), g )
//
// The baby rotations of x are hoisted (one decomposition of x for all of
// them); the diagonals are pre-rotated by -g so that one giant rotation
// serves each group. With Horner giants (with_horner_giants()) the groups
// are summed as rot(P_g0 + rot(P_g1 + ..., g1 - g0), g0): as many giant
// rotations, but their steps are the differences between consecutive giants
// (usually the single step n1) instead of every giant, so fewer keys. Zero diagonals are skipped, and n1 is chosen for
// the given set of diagonals to minimise the rotations (baby + giant, each a key switch; on a tie, fewer giant ones,
// which are not hoisted).
//
// Levels and scale: one level. The diagonals are constants encoded at x's
// level with scale q_level (times output scale / x's scale when an output
// scale is asked for), so the single rescale at the end returns exactly x's
// scale (or the output scale).
#pragma once

#include <algorithm>
#include <complex>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

using runtime::ProgramBuilder;
using runtime::Slots;
using runtime::ValueRef;

class LinearTransform {
 public:
  // A rows x cols matrix (every row the same length): x holds its cols
  // entries in slots 0..cols-1 of each input period, y its rows entries in
  // slots 0..rows-1 of each output period.
  static LinearTransform from_matrix(const std::vector<std::vector<double>>& matrix, std::size_t slots);
  static LinearTransform from_matrix(const std::vector<Slots>& matrix, std::size_t slots);
  // Diagonals by index k in [0, period) (negative k is read modulo period),
  // each `period` values; period a power of two dividing `slots`.
  static LinearTransform from_diagonals(std::map<long, Slots> diagonals, std::size_t period, std::size_t slots);
  // Rectangular: diagonals by index k in [0, input_period), each
  // max(input, output period) values (slot j: M[j mod py][(j + k) mod px]).
  static LinearTransform from_diagonals(std::map<long, Slots> diagonals, std::size_t input_period,
                                        std::size_t output_period, std::size_t slots);

  std::size_t input_period() const { return input_period_; }
  std::size_t output_period() const { return output_period_; }
  std::size_t slots() const { return slots_; }
  // The non-zero diagonals' indices, in [0, period).
  std::vector<long> diagonal_indices() const;
  long baby_step() const { return baby_; }  // n1
  // The same transform with the baby step n1 (1 <= n1 <= input period)
  // instead of the chosen one: n1 = input period hoists every rotation.
  LinearTransform with_baby_step(long n1) const;
  // The same transform with its groups summed by Horner's rule (fewer keys,
  // as many rotations); with_horner_giants(false) undoes it.
  LinearTransform with_horner_giants(bool horner = true) const;
  bool horner_giants() const { return horner_; }
  // The same transform with its giant rotations and the sum of the groups
  // as one rotate_sum (one ModDown for all of them instead of one per giant
  // rotation; its own residues, and a backend that has rotate_sum);
  // with_rotate_sum(false) undoes it. Horner giants take precedence.
  LinearTransform with_rotate_sum(bool rotate_sum = true) const;
  bool rotate_sum() const { return rotate_sum_; }
  // Non-zero rotation steps: the hoisted baby ones and the giant ones (with
  // Horner giants: the steps between consecutive giants and to the first).
  std::vector<long> baby_steps() const;
  std::vector<long> giant_steps() const;
  // Every rotation key apply() needs (the union).
  std::vector<long> rotation_steps() const;
  // The rotations apply() issues: hoisted baby ones plus giant ones.
  std::size_t key_switches() const;

  // y = M x. Constants are named from `name` ("<name>_<k>"). One level;
  // the result has x's scale exactly, or `output_scale`.
  ValueRef apply(ProgramBuilder& b, ValueRef x, const std::string& name = "diag",
                 std::optional<double> output_scale = std::nullopt) const;

  // The sum apply() rescales: at x's level, with scale x's scale (or the
  // output scale) times the level's rescale divisor.
  ValueRef apply_unrescaled(ProgramBuilder& b, ValueRef x, const std::string& name = "diag",
                            std::optional<double> output_scale = std::nullopt) const;

  // apply_unrescaled from x's rotations by every baby step, made elsewhere
  // (rotated[0] is x; rotated[j] its rotation by j for each of baby_steps()).
  ValueRef sum_groups(ProgramBuilder& b, const std::map<long, ValueRef>& rotated, const std::string& name = "diag",
                      std::optional<double> output_scale = std::nullopt) const;

  // The giant groups (diagonals sharing k - k mod n1), what part() splits.
  std::size_t giant_groups() const;
  // Term-parallel: part `rank` of `ranks` (ranks <= giant_groups()) holds
  // every ranks-th giant group, with this transform's baby step and without
  // Horner giants or rotate_sum. The parts' apply_unrescaled sums add up,
  // residue for residue, to the whole transform's sum without either: the
  // groups are the same and modular addition is exact in any order.
  LinearTransform part(std::size_t rank, std::size_t ranks) const;

  // The same product on clear slots (x of `slots` values, packed).
  Slots apply_clear(const Slots& x) const;
  // x repeated with the input period over all slots.
  Slots pack(const Slots& x) const;

 private:
  LinearTransform(std::map<long, Slots> diagonals, std::size_t input_period, std::size_t output_period,
                  std::size_t slots);
  Slots pre_rotated(long k, long giant) const;
  void check_slots(const ProgramBuilder& b) const;

  // Non-zero diagonals only, each with period() = max(input, output period) values.
  std::map<long, Slots> diagonals_;
  std::size_t input_period_ = 0;
  std::size_t output_period_ = 0;
  std::size_t slots_ = 0;
  long baby_ = 1;
  bool horner_ = false;
  bool rotate_sum_ = false;
  std::size_t period() const { return std::max(input_period_, output_period_); }
};

// The n1 that minimises baby + giant rotations for a set of diagonal indices
// in [0, period) (ties: fewer giant rotations, then the smaller n1).
long best_baby_step(const std::vector<long>& diagonals, std::size_t period);

}  // namespace fhelium::circuits
