// The core's C++ Backend interface over a plugin's C table.
#pragma once

#include <memory>

#include "fhelium/backend/backend.hpp"
#include "plugin_library.hpp"

namespace fhelium::plugins {

// Creates a backend instance from a loaded plugin (throws PluginError when
// the plugin's create function fails).
std::shared_ptr<Backend> make_plugin_backend(std::shared_ptr<PluginLibrary> library, int device);

// The plugin's device description (DEVICE_INFO extension), or "" without one.
std::string describe_devices(Backend& plugin_backend);

}  // namespace fhelium::plugins
