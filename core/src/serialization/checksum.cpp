#include "serialization/checksum.hpp"

// Header-only use of Debian's libxxhash-dev: no link dependency, and the
// streaming state can live inside Checksum.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fhelium/error.hpp"

namespace fhelium::serialization {

struct Checksum::State {
  XXH3_state_t xxh;
};

Checksum::Checksum() : state_(std::make_unique<State>()) {
  if (XXH3_64bits_reset(&state_->xxh) != XXH_OK) throw Error("XXH3 state reset failed");
}

Checksum::~Checksum() = default;

void Checksum::update(const void* data, std::size_t bytes) {
  if (XXH3_64bits_update(&state_->xxh, data, bytes) != XXH_OK) throw Error("XXH3 update failed");
}

std::uint64_t Checksum::digest() const { return XXH3_64bits_digest(&state_->xxh); }

std::uint64_t checksum(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace fhelium::serialization
