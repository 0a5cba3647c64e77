// Small circuits on the slots: alignment of level and scale, sum of slots by
// rotate-and-add, inner products. Each appends nodes to a builder bound to a
// context (ProgramBuilder(context, name)) and states what it consumes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

using runtime::ProgramBuilder;
using runtime::Slots;
using runtime::ValueRef;

// x at `level` with exactly `scale`. Free when x already has that scale
// (a drop of levels at most); otherwise one level: x is dropped to level + 1,
// multiplied by 1 at the scale that makes the rescale land on `scale`, and
// rescaled. StateError when x is below the level this needs. A scale
// within same_scale but not exact is set the same way where x is above
// `level`, and kept at `level` itself.
ValueRef align(ProgramBuilder& b, ValueRef x, int level, double scale);

// Slot i gets x[i] + x[i+1] + ... + x[i+width-1] (indices modulo the slot
// count): log2(width) rotations and additions, no level. width is a power of
// two no larger than the slot count.
ValueRef sum_slots(ProgramBuilder& b, ValueRef x, std::size_t width);
// The rotation steps sum_slots(width) uses: 1, 2, 4, ..., width / 2.
std::vector<long> sum_slots_steps(std::size_t width);

// Slot 0 (and every slot i, over the window i .. i+width-1) gets the inner
// product of x and y over `width` slots: one multiply_relinearize_rescale at
// the lower of their levels (one level; scale x.scale * y.scale / q), then
// sum_slots. Keys: relinearization and sum_slots_steps(width).
ValueRef inner_product(ProgramBuilder& b, ValueRef x, ValueRef y, std::size_t width);
// Against clear weights: a constant (named from `name`) encoded at scale q
// of x's level, so the result keeps x's scale exactly; one level. Keys:
// sum_slots_steps(width).
ValueRef inner_product(ProgramBuilder& b, ValueRef x, const Slots& weights, std::size_t width,
                       const std::string& name = "weights");

}  // namespace fhelium::circuits
