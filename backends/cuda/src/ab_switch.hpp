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

// Environment variable `name` as a non-negative integer, or `otherwise` when
// it is unset or not one.
inline int env_int(const char* name, int otherwise) {
  const char* e = std::getenv(name);
  if (e == nullptr || *e == '\0') return otherwise;
  int v = 0;
  for (const char* c = e; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || v > 100000) return otherwise;
    v = 10 * v + (*c - '0');
  }
  return v;
}

}  // namespace fhelium::cuda
