// A plugin whose create function fails.
#include "fhelium/error.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {
std::shared_ptr<fhelium::Backend> make(int device) {
  throw fhelium::BackendError("device " + std::to_string(device) + " is not present");
}
}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN("failing", "0.0.1", make)
