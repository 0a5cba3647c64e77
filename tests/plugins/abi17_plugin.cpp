// A plugin as built against ABI 1.7: 32-bit words, but no wide levels, no
// chain of level 0 only and a ModRaise from one prime. The host must refuse
// the first two by name and lift a two-prime level 0 itself.
#include "fhelium/plugin_sdk.hpp"
#include "forwarding_backend.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<fhelium::test::ForwardingBackend>(); }

}  // namespace

extern "C" __attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) {
  static const FheliumBackendApi api = [] {
    FheliumBackendApi a = *fhelium::sdk::Api<make, nullptr>::table("abi17", "1.7.0");
    a.abi_minor = 7;
    a.struct_size = offsetof(FheliumBackendApi, sum_products);  // the 1.7 table ends at upload_filled
    // What a 1.7 plugin's ModRaise did with a level 0 of two primes.
    a.mod_raise = [](FheliumOpArgs*) { return fhelium::sdk::invalid("mod_raise: expected 1 limb at level 0"); };
    return a;
  }();
  return &api;
}
