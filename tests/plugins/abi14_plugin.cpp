// A plugin as built against ABI 1.4: the STREAMS extension ends at
// recording_destroy (no timing events), version 1.4. The host must still find
// the extension, and time with the host clock.
#include "fhelium/plugin_sdk.hpp"
#include "forwarding_backend.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<fhelium::test::ForwardingBackend>(); }

using Sdk = fhelium::sdk::Api<make, nullptr>;

}  // namespace

extern "C" __attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) {
  static const FheliumStreamsExtension streams = [] {
    FheliumStreamsExtension s{};
    for (const FheliumExtension* e = Sdk::table("abi14", "1.4.0")->extension_start; e != nullptr; e = e->next) {
      if (e->type == FHELIUM_EXTENSION_STREAMS) s = *reinterpret_cast<const FheliumStreamsExtension*>(e);
    }
    s.base.next = nullptr;
    s.base.struct_size = offsetof(FheliumStreamsExtension, event_create_timing);  // the 1.4 extension
    // Past struct_size: a host that reads them anyway gets this error.
    s.event_create_timing = [](FheliumAsyncArgs*) { return fhelium::sdk::invalid("read past the extension's size"); };
    s.event_elapsed = s.event_create_timing;
    return s;
  }();
  static const FheliumBackendApi api = [] {
    FheliumBackendApi a = *Sdk::table("abi14", "1.4.0");
    a.abi_minor = 4;
    a.extension_start = &streams.base;
    return a;
  }();
  return &api;
}
