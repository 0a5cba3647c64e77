// `fhelium bench`: times Engine operations on a backend chosen by name and
// prints JSON (median and minimum per operation).
#pragma once

#include <string>
#include <vector>

#include "op_bench.hpp"

namespace fhelium::apps {

struct BenchOptions {
  std::string backend = "auto";
  int device = 0;
  std::vector<std::string> presets = {"slots8192_scale40_levels7"};
  std::vector<std::string> ops;  // empty: all
  int runs = 20;
  int warmup = 2;
  std::string output;  // empty or "-": stdout
};

int run_bench_command(const BenchOptions& options);

}  // namespace fhelium::apps
