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
      chosen.note = std::string("cuda backend unavailable (") + e.what() + "); using cpu";
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
