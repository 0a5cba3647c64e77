// Loading backends by name at run time.
//
// A backend plugin is a shared library `libfhelium-backend-NAME.so` exporting
// one C symbol, `fhelium_backend_api` (see plugin_abi.h). `load_backend`
// finds it on the search path (or takes an explicit file path), checks the ABI
// version and wraps the table in the core's C++ `Backend` interface. Every
// object created through the backend keeps the library loaded while it lives.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"

namespace fhelium {

struct LoadOptions {
  int device = 0;                         // device index passed to the plugin
  std::vector<std::string> search_path;   // searched before the default folders
};

struct BackendInfo {
  std::string name;
  std::string version;
  std::string path;                       // the file it was (or would be) loaded from
  int abi_major = 0;
  int abi_minor = 0;
  std::vector<std::string> devices;       // e.g. "cpu: 2 threads", "NVIDIA H200, 139 GiB"
  std::string error;                      // non-empty when the plugin could not be loaded
};

// The folders searched, in order: options.search_path, FHELIUM_BACKEND_PATH
// (colon-separated), the build tree's plugin folder, the install tree's.
std::vector<std::string> backend_search_path(const LoadOptions& options = {});

// `name_or_path` is a backend name ("cpu", "cuda", a third party's) or a path
// to a plugin file (anything containing '/'). Throws PluginError naming the
// file and the reason: not found (listing where it looked), not a shared
// library, no entry symbol, ABI major mismatch, create failed, duplicate names.
std::shared_ptr<Backend> load_backend(const std::string& name_or_path, const LoadOptions& options = {});

// Every plugin found on the search path; broken ones are listed with `error`.
std::vector<BackendInfo> list_backends(const LoadOptions& options = {});

}  // namespace fhelium
