// A plugin of a newer minor ABI version: a larger table with appended fields.
#include "forwarding_backend.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<fhelium::test::ForwardingBackend>(); }

struct FutureApi {
  FheliumBackendApi v1;
  void (*appended_later)(void);  // a function this host does not know
};

void future_function() {}

}  // namespace

extern "C" __attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) {
  static const FutureApi api = [] {
    FutureApi a{*fhelium::sdk::Api<make, nullptr>::table("future", "1.99.0"), &future_function};
    a.v1.struct_size = sizeof(FutureApi);
    a.v1.abi_minor = FHELIUM_ABI_MINOR + 1;
    return a;
  }();
  return &api.v1;
}
