// Fixed-width little-endian fields. The format is little-endian and so is
// every host FHElium builds for, which lets residues move with plain copies.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace fhelium::serialization {

static_assert(std::endian::native == std::endian::little,
              "the FHElium format stores residues as little-endian words, copied as they are in memory");

template <class T>
void store_le(std::uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

template <class T>
T load_le(const std::uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace fhelium::serialization
