// `fhelium demo`: a small built-in pipeline on the default backend that prints
// its errors against the same calculation in double precision.
#pragma once

#include <string>

namespace fhelium::apps {

struct DemoOptions {
  std::string preset = "slots8192_scale40_levels7";
  std::string backend = "auto";  // a backend name or plugin path; auto: cuda if it loads, else cpu
  bool show_pipeline = false;    // print the built-in pipeline instead of running it
};

// The demo's YAML pipeline.
const char* demo_pipeline();

// Returns the process exit code (non-zero when an error exceeds its bound).
int run_demo(const DemoOptions& options);

}  // namespace fhelium::apps
