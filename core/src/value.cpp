#include "fhelium/value.hpp"

// Header-only use of Debian's libxxhash-dev, as the serialization checksum.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fhelium/context.hpp"

namespace fhelium {

bool same_scale(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

std::string to_string(Domain d) { return d == Domain::ntt ? "ntt" : "coefficient"; }
std::string to_string(Basis b) { return b == Basis::Q ? "Q" : "QP"; }

int ValueState::limbs(const Context& context) const {
  if (level < 0 || level > context.max_level()) return 0;  // validators name the level
  return context.level_basis(level).count + (basis == Basis::QP ? context.special_count() : 0);
}

int ValueState::key_limb(const Context& context, int limb) const { return context.key_limb(level, limb); }

std::size_t ValueState::words(const Context& context) const {
  return static_cast<std::size_t>(components) * static_cast<std::size_t>(limbs(context)) * context.ring_degree();
}

std::string ValueState::describe() const {
  std::ostringstream s;
  s << "{context " << context_id << ", level " << level << ", scale 2^" << std::log2(scale) << ", domain "
    << to_string(domain) << ", basis " << to_string(basis) << ", components " << components << ", word "
    << static_cast<int>(word_size) << " bits}";
  return s.str();
}

std::uint64_t HostValue::residue_digest() const { return XXH3_64bits(data.data(), data.size() * sizeof(u64)); }

u64* HostValue::limb(const Context& context, int component, int limb) {
  const auto limbs = static_cast<std::size_t>(state.limbs(context));
  return data.data() +
         (static_cast<std::size_t>(component) * limbs + static_cast<std::size_t>(limb)) * context.ring_degree();
}

const u64* HostValue::limb(const Context& context, int component, int limb) const {
  return const_cast<HostValue*>(this)->limb(context, component, limb);
}

}  // namespace fhelium
