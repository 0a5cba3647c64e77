// The payload of one switching key (relinearization key, or one Galois key of
// a set): unseeded, digits x (b_j, a_j) exactly as in memory; seeded, every
// b_j then the 32-byte seed of the a_j.
#pragma once

#include <exception>
#include <string>
#include <thread>
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
// The prime of each limb of a key half (Q's primes, then P's).
std::vector<u64> key_moduli(const Context& context);
void finish_switch_key(const Context& context, HostSwitchKey& key, bool seeded, const Seed& seed);

// finish_switch_key on a second thread while the b_j are read: for an
// uncompressed seeded payload on a seekable input, the seed is read ahead from
// the payload's end and the a_j are expanded from it meanwhile (on 2 cores the
// expansion no longer adds to the read). finish() then only checks that the
// payload's own seed is the one read ahead; elsewhere it expands as usual.
class SeededExpansion {
 public:
  // `flags`: the object's or the Galois key entry's (seeded, compressed).
  SeededExpansion(Input& in, const Context& context, HostSwitchKey& key, std::uint16_t flags);
  ~SeededExpansion();
  SeededExpansion(const SeededExpansion&) = delete;
  SeededExpansion& operator=(const SeededExpansion&) = delete;

  // After the payload and its check were read; `seed` is the payload's.
  void finish(const Seed& seed);

 private:
  void join();

  const Context& context_;
  HostSwitchKey& key_;
  bool seeded_;
  Seed early_seed_{};
  std::thread worker_;
  std::exception_ptr failure_;
};

std::string describe_switch_key_part(int part, int limb);

// The relinearization key's header, checked (kind, context, state, sizes),
// then its payload and check into a host key.
ReadHeader read_relinearization_key_header(Input& in, const Context& context);
HostSwitchKey read_relinearization_key_payload(Input& in, const Context& context, const ReadHeader& header);

}  // namespace fhelium::serialization
