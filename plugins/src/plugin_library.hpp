// One loaded plugin file: the shared library and its checked API table.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <memory>
#include <string>

#include "fhelium/plugin_abi.h"

namespace fhelium::plugins {

struct PluginLibrary {
  boost::dll::shared_library library;
  const FheliumBackendApi* api = nullptr;
  std::string path;
};

// Loads `path` and checks the entry symbol and the ABI version. Throws
// PluginError naming the file and the reason.
std::shared_ptr<PluginLibrary> open_plugin(const std::string& path);

}  // namespace fhelium::plugins
