// Built twice under two file names that both claim the name "twin".
#include "forwarding_backend.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {
std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<fhelium::test::ForwardingBackend>(); }
}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN("twin", "0.0.1", make)
