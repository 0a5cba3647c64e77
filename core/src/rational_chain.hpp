// The rational chain of the 32-bit word family (params.hpp): which primes
// each level holds, and how they are chosen so that every rescale divides by
// about the scale.
#pragma once

#include <cstdint>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/context.hpp"

namespace fhelium::rational_chain {

// Prime order in the context: t1, t0, then the mains.
constexpr int terminal_count = 2;

// The main primes of a 32-bit chain, below its wide levels (0: a chain of
// two primes alone, level 0 only).
inline int mains(const CkksParameters& params) {
  return static_cast<int>(params.q_bits.size()) - terminal_count - 2 * params.wide_levels;
}

// The top level for `mains` main primes (2 mod 4, at least 2): 3 (mains - 2) / 4 + 1.
int top_level(int mains);
// The basis of every level: 0 .. top_level(mains) of the rational chain,
// then `wide_levels` levels of two more primes each. mains = 0: level 0 only,
// two primes.
std::vector<LevelBasis> levels(int mains, int wide_levels);

// The Q primes [t1, t0, m_0 .. m_(mains - 1)], below 2^31 and 1 mod 2N, none
// in `exclude`. The terminals are the pair whose product is nearest the
// scale; the mains follow the levels upward from level 0 (the two largest
// primes below 2^30), each pair chosen so that the level's nominal scale,
// sqrt(scale below x D / A), stays nearest the scale. Then each wide level's
// pair, whose product is nearest 2^61. mains = 0: the two largest primes
// below 2^30 (level 0 only).
std::vector<u64> choose_primes(std::uint64_t ring_degree, double scale, int mains, int wide_levels,
                               const std::vector<u64>& exclude);

}  // namespace fhelium::rational_chain
