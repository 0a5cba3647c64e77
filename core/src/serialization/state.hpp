// The state fields of a header (level, scale, domain, basis, components,
// digits, entries): what each object kind writes there and what a loader
// accepts.
#pragma once

#include <cstdint>
#include <string>

#include "fhelium/serialization.hpp"
#include "serialization/framing.hpp"

namespace fhelium::serialization {

// Kind, word size and fingerprint of `context`; state fields zero.
Header base_header(const Context& context, ObjectKind kind);
void set_state(Header& header, const ValueState& state);

// The value state a header describes, checked to be legal in `context`:
// level within the context, a known domain and basis, `min..max_components`
// components, a finite positive scale, digits and entries zero.
ValueState value_state(const Header& header, const Context& context, int min_components, int max_components,
                       const std::string& what);

// The state every key has: top level, NTT domain, basis QP, two components, scale 1.
ValueState key_state(const Context& context);
// A key header: key_state and `digits` (0 for a public key), no entries
// except for a Galois key set and the encapsulation keys, whose entries are
// their caller's to check.
void check_key_state(const Header& header, const Context& context, std::uint32_t digits, const std::string& what);

// Parameters and secret keys have no value state: every state field is zero.
void check_no_state(const Header& header, const std::string& what);
void check_not_seeded(const Header& header, const std::string& what);

}  // namespace fhelium::serialization
