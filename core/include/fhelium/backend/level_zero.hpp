// Level 0 of several primes (the 32-bit family's two mains) as one integer:
// the constants of Garner's algorithm, shared by the host's ModRaise and the
// backends' kernels so that both lift every coefficient to the same integer.
#pragma once

#include <optional>
#include <vector>

#include "fhelium/backend/modarith.hpp"

namespace fhelium {

class Context;

// modulus and inverses are set only when Q_0 = q_0 .. q_(count-1) is below
// 2^63, as the centered lift (a signed 64-bit integer) needs.
struct LevelZeroGarner {
  std::vector<u64> primes;     // q_0 .. q_(count-1)
  std::vector<u64> inverses;   // (q_0 .. q_(j-1))^-1 mod q_j; 1 for j = 0
  std::optional<u64> modulus;  // Q_0
};

LevelZeroGarner level_zero_garner(const Context& context);

}  // namespace fhelium
