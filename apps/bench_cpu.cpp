// Times each Engine operation on the CPU backend (the shared operation
// benchmark, op_bench.hpp) and prints JSON (median, min, runs, parameters,
// threads, machine). Not a test.
#include <CLI/CLI.hpp>
#include <sys/utsname.h>

#include <boost/json.hpp>
#include <iostream>
#include <thread>

#include "fhelium/cpu/cpu_backend.hpp"
#include "op_bench.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

json::object machine(int threads) {
  utsname u{};
  uname(&u);
  return {{"cpu", apps::cpu_model()},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"threads", threads},
          {"kernel", std::string(u.release)},
          {"compiler", __VERSION__}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium CPU operation benchmark (JSON on stdout)"};
  std::vector<std::string> presets = {"slots8192_scale40_levels7"};
  std::vector<std::string> ops = {"encrypt",  "decrypt", "add",         "multiply_plain", "multiply",
                                  "relinearize", "rescale", "rotate", "ntt_forward", "ntt_inverse"};
  int threads = 1;
  int runs = 20;
  app.add_option("--preset", presets, "Presets to measure")->expected(1, -1);
  app.add_option("--ops", ops, "Operations to measure (the default is every one)")->expected(1, -1)->capture_default_str();
  app.add_option("--threads", threads, "CPU threads for the backend");
  app.add_option("--runs", runs, "Timed runs per operation (after 2 warm-up runs)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    json::array out;
    const auto backend = cpu::make_cpu_backend({threads});
    for (const auto& p : presets) out.push_back(apps::bench_preset(p, backend, ops, runs, 2));
    std::cout << json::serialize(json::object{{"benchmark", "fhelium-cpu-ops"},
                                              {"machine", machine(threads)},
                                              {"presets", std::move(out)}})
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-cpu: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
