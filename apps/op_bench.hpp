// The operation benchmark of `fhelium bench` (any backend by name, through
// the plugin loader): Engine operations on one preset, each run timed by the
// backend's timing events (host operations by the host clock), median and
// minimum per operation.
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"

namespace fhelium::apps {

// Every operation the benchmark knows, in its order.
std::vector<std::string> bench_operations();
// InvalidArgumentError naming the first unknown operation and the known ones.
void check_bench_operations(const std::vector<std::string>& ops);

// {"median_ms", "min_ms", "runs"} of durations in milliseconds.
boost::json::object timing_summary(std::vector<double> ms);

// {"preset", "parameters", "results": [{"op", "median_ms", "min_ms", "runs"}]}.
boost::json::object bench_preset(const std::string& preset_name, const std::shared_ptr<Backend>& backend,
                                 const std::vector<std::string>& ops, int runs, int warmup);

// The CPU's model name from /proc/cpuinfo ("unknown" when absent).
std::string cpu_model();

}  // namespace fhelium::apps
