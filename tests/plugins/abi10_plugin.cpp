// A plugin as built against ABI 1.0: the table up to rotate_hoisted, version 1.0, and an
// extension chain of DEVICE_INFO only (no STREAMS). Its C++ backend could
// capture (it forwards to the CPU backend), but nothing carries that across.
#include "forwarding_backend.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<fhelium::test::ForwardingBackend>(); }

using Sdk = fhelium::sdk::Api<make, nullptr>;

}  // namespace

extern "C" __attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) {
  static const FheliumDeviceInfoExtension device_info{
      {sizeof(FheliumDeviceInfoExtension), FHELIUM_EXTENSION_DEVICE_INFO, nullptr}, &Sdk::describe_devices};
  static const FheliumBackendApi api = [] {
    FheliumBackendApi a = *Sdk::table("abi10", "1.0.0");
    a.abi_minor = 0;
    a.struct_size = offsetof(FheliumBackendApi, multiply_relinearize);  // the 1.0 table ends at rotate_hoisted
    // Past struct_size: a host that reads it anyway gets this error.
    const FheliumOpFn past_the_table = [](FheliumOpArgs*) {
      return fhelium::sdk::invalid("read past the table's struct_size");
    };
    a.multiply_relinearize = past_the_table;
    a.sum_products = past_the_table;
    a.sum_constant_products = past_the_table;
    a.sum_product_groups = past_the_table;
    a.multiply_relinearize_rescale = past_the_table;
    a.extension_start = &device_info.base;
    return a;
  }();
  return &api;
}
