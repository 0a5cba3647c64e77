// Choosing a backend by name for the apps: "auto" is the cuda plugin when it
// loads (a GPU is present), otherwise cpu.
#pragma once

#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/plugins/loader.hpp"

namespace fhelium::apps {

struct ChosenBackend {
  std::shared_ptr<Backend> backend;
  std::vector<std::string> devices;  // as `fhelium backends` lists them
  std::string note;                  // why auto fell back to cpu, if it did
};

// Whether a cuda plugin file is on the search path, loadable or not.
inline bool cuda_plugin_exists(const LoadOptions& options) {
  for (const auto& info : list_backends(options)) {
    if (info.name == "cuda" || info.path.find("fhelium-backend-cuda") != std::string::npos) return true;
  }
  return false;
}

// "cuda:1": a backend name with a device index (a path, with '/', is taken as it is).
struct NamedDevice {
  std::string name;
  std::optional<int> device;
};

inline NamedDevice split_device(const std::string& name) {
  const auto colon = name.rfind(':');
  if (colon == std::string::npos || name.find('/') != std::string::npos) return {name, std::nullopt};
  const std::string index = name.substr(colon + 1);
  int device = -1;
  const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), device);
  if (index.empty() || ec != std::errc() || end != index.data() + index.size() || device < 0 || colon == 0) {
    throw InvalidArgumentError("backend '" + name + "': expected NAME or NAME:DEVICE with DEVICE an index >= 0");
  }
  return {name.substr(0, colon), device};
}

// `name` may carry the device ("cuda:1"), which then replaces `device`.
inline ChosenBackend choose_backend(const std::string& backend_name, int device = 0,
                                    const std::vector<std::string>& search_path = {}) {
  const NamedDevice named = split_device(backend_name);
  const std::string& name = named.name;
  LoadOptions options;
  options.device = named.device.value_or(device);
  options.search_path = search_path;
  ChosenBackend chosen;
  if (name == "auto") {
    try {
      chosen.backend = load_backend("cuda", options);
    } catch (const Error& e) {
      chosen.note = cuda_plugin_exists(options)
                        ? std::string("running on cpu: the cuda backend found no usable GPU (") + e.what() + ")"
                        : "running on cpu: the cuda backend is not built here (nvcc was not found at build time)";
      chosen.backend = load_backend("cpu", options);
    }
  } else {
    chosen.backend = load_backend(name, options);
  }
  for (const auto& info : list_backends(options)) {
    if (info.error.empty() && info.name == chosen.backend->name()) {
      chosen.devices = info.devices;
      break;
    }
  }
  return chosen;
}

}  // namespace fhelium::apps
