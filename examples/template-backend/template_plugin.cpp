// The plugin entry point: libfhelium-backend-template.so.
#include "fhelium/error.hpp"
#include "fhelium/plugin_sdk.hpp"
#include "template_backend.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make_backend(int device) {
  if (device != 0) throw fhelium::InvalidArgumentError("the template backend has one device, index 0");
  return std::make_shared<example::TemplateBackend>();
}

}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN("template", "0.1.0", make_backend)
