// The uniform half `a` of seeded keys and ciphertexts, from its 32-byte seed.
#include "fhelium/context.hpp"
#include "fhelium/keys.hpp"

namespace fhelium {

void expand_uniform(const Context& context, const Seed& seed, int limbs, std::span<u64* const> blocks,
                    int first_key_limb) {
  const std::size_t n = context.ring_degree();
  Csprng stream(seed);
  for (u64* block : blocks) {
    for (int limb = 0; limb < limbs; ++limb) {
      stream.fill_uniform(std::span(block + static_cast<std::size_t>(limb) * n, n),
                          context.key_modulus(first_key_limb + limb).value);
    }
  }
}

}  // namespace fhelium
