#include "fhelium/backend/level_zero.hpp"

#include <utility>

#include "fhelium/context.hpp"

namespace fhelium {

LevelZeroGarner level_zero_garner(const Context& context) {
  LevelZeroGarner out;
  const int count = context.level_basis(0).count;
  for (int j = 0; j < count; ++j) out.primes.push_back(context.level_modulus(0, j).value);
  std::vector<u64> inverses;
  u128 modulus = 1;  // below 2^63 before each product, so no product overflows
  for (int j = 0; j < count; ++j) {
    const Modulus& q = context.level_modulus(0, j);
    inverses.push_back(j == 0 ? 1 : inv_mod(static_cast<u64>(modulus % q.value), q));
    modulus *= q.value;
    if (modulus >> 63 != 0) return out;  // no centered lift: no modulus, no inverses
  }
  out.inverses = std::move(inverses);
  out.modulus = static_cast<u64>(modulus);
  return out;
}

}  // namespace fhelium
