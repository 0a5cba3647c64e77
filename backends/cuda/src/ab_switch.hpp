// A/B switches: environment variables that select a kernel variant for the
// measurements in docs/perf/cuda.md. Callers read each one once per process.
#pragma once

#include <cstdlib>
#include <string_view>

namespace fhelium::cuda {

// Whether environment variable `name` is set to exactly `value`.
inline bool env_is(const char* name, std::string_view value) {
  const char* e = std::getenv(name);
  return e != nullptr && value == e;
}

}  // namespace fhelium::cuda
