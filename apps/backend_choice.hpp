// Choosing a backend by name for the apps: "auto" is the cuda plugin when it
// loads (a GPU is present), otherwise cpu.
#pragma once

#include <cstdio>
#include <memory>
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

inline ChosenBackend choose_backend(const std::string& name, int device = 0,
                                    const std::vector<std::string>& search_path = {}) {
  LoadOptions options;
  options.device = device;
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
