// The payload of one switching key (relinearization key, or one Galois key of
// a set): unseeded, digits x (b_j, a_j) exactly as in memory; seeded, every
// b_j then the 32-byte seed of the a_j.
#pragma once

#include <string>
#include <vector>

#include "fhelium/keys.hpp"
#include "serialization/payload.hpp"

namespace fhelium::serialization {

// StateError unless `key` has the context's id, digits and word count.
void check_saving_switch_key(const Context& context, const HostSwitchKey& key, const std::string& what);

std::uint64_t switch_key_payload_bytes(const Context& context, bool seeded);
std::vector<ConstSegment> switch_key_segments(const Context& context, const HostSwitchKey& key);

// An empty key of this context, and the segments that fill it (the last one
// is `seed` when seeded); finish_switch_key expands the seed afterwards.
HostSwitchKey empty_switch_key(const Context& context, std::uint32_t galois_element);
std::vector<Segment> switch_key_segments(const Context& context, HostSwitchKey& key, bool seeded, Seed& seed);
void finish_switch_key(const Context& context, HostSwitchKey& key, bool seeded, const Seed& seed);

std::string describe_switch_key_part(int part, int limb);

}  // namespace fhelium::serialization
