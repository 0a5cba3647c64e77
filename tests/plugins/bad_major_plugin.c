/* A plugin of another ABI major version, written in C (this also proves
 * plugin_abi.h is valid C). */
#include "fhelium/plugin_abi.h"

static FheliumBackendApi api;

__attribute__((visibility("default"))) const FheliumBackendApi* fhelium_backend_api(void) {
  api.struct_size = sizeof(api);
  api.abi_major = 99;
  api.abi_minor = 0;
  api.name = "oldstyle";
  api.version = "99.0";
  return &api;
}
