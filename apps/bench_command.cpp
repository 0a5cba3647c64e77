#include "bench_command.hpp"

#include <sys/utsname.h>

#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <thread>

#include "backend_choice.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/pipeline.hpp"
#include "op_bench.hpp"

namespace fhelium::apps {

namespace json = boost::json;

int run_bench_command(const BenchOptions& options) {
  ChosenBackend chosen = choose_backend(options.backend, options.device);
  if (!chosen.note.empty()) std::cerr << chosen.note << "\n";
  const std::vector<std::string> ops = options.ops.empty() ? bench_operations() : options.ops;
  check_bench_operations(ops);
  json::array presets;
  for (const auto& p : options.presets) {
    presets.push_back(bench_preset(p, chosen.backend, ops, options.runs, options.warmup));
  }
  utsname u{};
  uname(&u);
  const json::object doc{{"benchmark", "fhelium-ops"},
                         {"backend", json::object{{"name", chosen.backend->name()},
                                                  {"device", options.device},
                                                  {"devices", json::value_from(chosen.devices)}}},
                         {"machine", json::object{{"cpu", cpu_model()},
                                                  {"hardware_threads", std::thread::hardware_concurrency()},
                                                  {"kernel", std::string(u.release)},
                                                  {"compiler", __VERSION__}}},
                         {"runs", options.runs},
                         {"warmup", options.warmup},
                         {"presets", std::move(presets)}};
  const std::string text = runtime::pretty_json(json::serialize(doc));
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
  } else {
    std::ofstream out(options.output);
    out << text;
    if (!out) throw Error("cannot write '" + options.output + "'");
  }
  return 0;
}

}  // namespace fhelium::apps
