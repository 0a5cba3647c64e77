// The parts of a plaintext or ciphertext load, shared by the host loaders and
// the loaders into an engine (into_engine.cpp).
#pragma once

#include <string>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/value.hpp"
#include "serialization/framing.hpp"

namespace fhelium::serialization {

struct ValueHeader {
  ReadHeader read;
  ValueState state;
  std::string what;  // "the ciphertext"
};

// Reads and checks the header: kind, context, a legal state with
// min..max components, a seeded form only where one exists, the sizes.
ValueHeader read_value_header(Input& in, const Context& context, ObjectKind kind, int min_components,
                              int max_components);
// The payload and check into a host value (c1 expanded when seeded).
HostValue read_value_payload(Input& in, const Context& context, const ValueHeader& header);
// The prime of each limb of a value of this state.
std::vector<u64> value_moduli(const Context& context, const ValueState& state);
// "component 1, limb 3"
std::string describe_limb(int component, int limb);

}  // namespace fhelium::serialization
