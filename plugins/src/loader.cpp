#include "fhelium/plugins/loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <boost/dll/runtime_symbol_info.hpp>

#include "fhelium/error.hpp"
#include "plugin_backend.hpp"
#include "plugin_library.hpp"

namespace fhelium {
namespace {

namespace fs = std::filesystem;
using plugins::PluginLibrary;

constexpr const char* file_prefix = "libfhelium-backend-";
constexpr const char* file_suffix = ".so";

bool is_plugin_file_name(const std::string& name) {
  return name.rfind(file_prefix, 0) == 0 && name.size() > std::string(file_prefix).size() + 3 &&
         name.compare(name.size() - 3, 3, file_suffix) == 0;
}

// Plugin files of one folder, sorted by name.
std::vector<std::string> plugin_files(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_plugin_file_name(it->path().filename().string())) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<std::string> backend_search_path(const LoadOptions& options) {
  std::vector<std::string> path = options.search_path;
  if (const char* env = std::getenv("FHELIUM_BACKEND_PATH")) {
    std::stringstream list(env);
    for (std::string item; std::getline(list, item, ':');) {
      if (!item.empty()) path.push_back(item);
    }
  }
  path.push_back(FHELIUM_BUILD_PLUGIN_DIR);
  // Where an installed program's plugins are, wherever the tree was moved.
  std::error_code ec;
  const fs::path program = boost::dll::program_location(ec);
  if (!ec) path.push_back((program.parent_path() / FHELIUM_PLUGIN_DIR_FROM_BIN).lexically_normal().string());
  path.push_back(FHELIUM_INSTALL_PLUGIN_DIR);
  return path;
}

std::shared_ptr<Backend> load_backend(const std::string& name_or_path, const LoadOptions& options) {
  if (name_or_path.find('/') != std::string::npos) {
    return plugins::make_plugin_backend(plugins::open_plugin(name_or_path), options.device);
  }
  const auto path = backend_search_path(options);
  // The first folder holding a plugin of this name wins (PATH semantics); two
  // files of that folder claiming the name are an error.
  for (const auto& folder : path) {
    std::vector<std::shared_ptr<PluginLibrary>> matches;
    std::vector<std::string> broken;
    for (const auto& file : plugin_files(folder)) {
      try {
        auto library = plugins::open_plugin(file);
        if (name_or_path == library->api->name) matches.push_back(std::move(library));
      } catch (const PluginError& e) {
        // A broken plugin only matters when its file name promises this backend.
        if (fs::path(file).filename() == std::string(file_prefix) + name_or_path + file_suffix) throw;
      }
    }
    if (matches.size() > 1) {
      std::vector<std::string> files;
      for (const auto& m : matches) files.push_back(m->path);
      throw PluginError("two backend plugins are named '" + name_or_path + "' in " + folder + ": " + joined(files) +
                        "; remove one or load it by path");
    }
    if (matches.size() == 1) return plugins::make_plugin_backend(matches.front(), options.device);
  }
  throw PluginError("no backend plugin named '" + name_or_path + "' (file " + file_prefix + name_or_path + file_suffix +
                    ") was found; searched: " + joined(path) + " (set FHELIUM_BACKEND_PATH to add folders)");
}

std::vector<BackendInfo> list_backends(const LoadOptions& options) {
  std::vector<BackendInfo> out;
  for (const auto& folder : backend_search_path(options)) {
    for (const auto& file : plugin_files(folder)) {
      BackendInfo info;
      info.path = file;
      try {
        auto library = plugins::open_plugin(file);
        info.name = library->api->name;
        info.version = library->api->version ? library->api->version : "";
        info.abi_major = library->api->abi_major;
        info.abi_minor = library->api->abi_minor;
        auto backend = plugins::make_plugin_backend(library, options.device);
        const std::string devices = plugins::describe_devices(*backend);
        std::stringstream lines(devices);
        for (std::string line; std::getline(lines, line);) {
          if (!line.empty()) info.devices.push_back(line);
        }
      } catch (const std::exception& e) {
        info.error = e.what();
      }
      out.push_back(std::move(info));
    }
  }
  return out;
}

}  // namespace fhelium
