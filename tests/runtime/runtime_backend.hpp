// The backend the runtime tests run on: the embedded CPU backend, or the
// plugin named by FHELIUM_RUNTIME_TEST_BACKEND (e.g. "cuda" on a GPU host).
// A named backend that cannot be loaded skips the tests with its reason.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/plugins/loader.hpp"

namespace fhelium::test {

struct TestBackend {
  std::shared_ptr<Backend> backend;  // nullptr: the fixture's CPU backend
  std::string skip_reason;
};

inline TestBackend runtime_test_backend() {
  const char* name = std::getenv("FHELIUM_RUNTIME_TEST_BACKEND");
  if (!name || !*name) return {};
  try {
    return {load_backend(name), ""};
  } catch (const Error& e) {
    return {nullptr, std::string("backend unavailable: ") + e.what()};
  }
}

}  // namespace fhelium::test
