#include "plugin_library.hpp"

#include <cstddef>
#include <filesystem>

#include "fhelium/error.hpp"

namespace fhelium::plugins {

std::shared_ptr<PluginLibrary> open_plugin(const std::string& path) {
  std::error_code exists_error;
  if (!std::filesystem::is_regular_file(path, exists_error)) {
    throw PluginError("backend plugin file '" + path + "' does not exist (or is not a regular file)");
  }
  auto plugin = std::make_shared<PluginLibrary>();
  plugin->path = path;
  boost::dll::fs::error_code ec;
  plugin->library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    throw PluginError("cannot load backend plugin '" + path + "': not a loadable shared library (" + ec.message() +
                      ")");
  }
  if (!plugin->library.has(FHELIUM_ENTRY_SYMBOL)) {
    throw PluginError("backend plugin '" + path + "' does not export the entry symbol '" FHELIUM_ENTRY_SYMBOL
                      "': expected a library built with the FHElium plugin SDK");
  }
  const auto entry = plugin->library.get<const FheliumBackendApi*()>(FHELIUM_ENTRY_SYMBOL);
  const FheliumBackendApi* api = entry();
  if (api == nullptr) throw PluginError("backend plugin '" + path + "' returned no API table");
  if (api->struct_size < offsetof(FheliumBackendApi, abi_minor) + sizeof(api->abi_minor)) {
    throw PluginError("backend plugin '" + path + "' has an API table of " + std::to_string(api->struct_size) +
                      " bytes, too small to hold its version");
  }
  if (api->abi_major != FHELIUM_ABI_MAJOR) {
    throw PluginError("backend plugin '" + path + "' uses plugin ABI " + std::to_string(api->abi_major) + "." +
                      std::to_string(api->abi_minor) + ", expected major version " +
                      std::to_string(FHELIUM_ABI_MAJOR) + " (this host speaks " + std::to_string(FHELIUM_ABI_MAJOR) +
                      "." + std::to_string(FHELIUM_ABI_MINOR) + ")");
  }
  // A newer minor version only appends: the fields of 1.0 must all be there.
  if (api->struct_size < offsetof(FheliumBackendApi, rotate_hoisted) + sizeof(api->rotate_hoisted)) {
    throw PluginError("backend plugin '" + path + "' has an API table of " + std::to_string(api->struct_size) +
                      " bytes, smaller than ABI " + std::to_string(FHELIUM_ABI_MAJOR) + ".0 requires (" +
                      std::to_string(sizeof(FheliumBackendApi)) + ")");
  }
  if (api->name == nullptr || api->name[0] == '\0') throw PluginError("backend plugin '" + path + "' has no name");
  plugin->api = api;
  return plugin;
}

}  // namespace fhelium::plugins
