// XXH3-64 (xxHash 0.8, seed 0), the format's integrity check: fast enough to
// run over every stored byte at load time. Not a MAC: it detects corruption,
// not tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fhelium::serialization {

// Fuzz builds define FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (libFuzzer's
// convention) and accept any check value, so that mutated inputs reach the
// validation behind the checks instead of stopping at them. No other build
// defines it.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr bool enforce_checks = false;
#else
inline constexpr bool enforce_checks = true;
#endif

class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(const void* data, std::size_t bytes);
  std::uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::uint64_t checksum(const void* data, std::size_t bytes);

}  // namespace fhelium::serialization
