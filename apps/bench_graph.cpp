// Benchmarks the GraphProgram replay path against the uncaptured evaluator on
// the same numerical schedule (the reference matvec), and prints JSON: per
// matrix size the median and minimum synchronized latency of
//   - the uncaptured evaluator (Executable::run + synchronize),
//   - graph replay including input staging (replay(inputs)),
//   - graph replay plus an owned copy of the output (copy_output),
// with warm-up and capture cost reported separately. Not a test.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>

#include "backend_choice.hpp"
#include "fhelium/params.hpp"
#include "matvec_session.hpp"
#include "op_bench.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

json::object summary(std::vector<double> seconds) {
  for (double& s : seconds) s *= 1e3;
  return apps::timing_summary(std::move(seconds));
}

json::object bench_size(apps::MatvecSession& s, int runs, int warmup) {
  // Distinct fresh ciphertexts, encrypted and uploaded before timing.
  std::vector<runtime::ValueTree> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(s.encrypt(s.random_vector()));
  auto input = [&](int i) -> const runtime::ValueTree& { return inputs[static_cast<std::size_t>(i) % inputs.size()]; };

  for (int i = 0; i < warmup; ++i) (void)s.executable().run(input(i));
  s.backend().synchronize();
  std::vector<double> eager;
  for (int i = 0; i < runs; ++i) {
    eager.push_back(apps::time_seconds([&] {
      (void)s.executable().run(input(i));
      s.backend().synchronize();
    }));
  }

  runtime::CaptureOptions options;
  options.warmup = warmup;
  runtime::GraphProgram program = runtime::GraphProgram::capture(s.backend(), s.context(), s.schedule(), input(0), options);
  for (int i = 0; i < warmup; ++i) (void)program.replay(input(i));
  std::vector<double> replay;
  for (int i = 0; i < runs; ++i) replay.push_back(apps::time_seconds([&] { (void)program.replay(input(i)); }));
  runtime::ReplayOptions owned;
  owned.copy_output = true;
  std::vector<double> replay_owned;
  for (int i = 0; i < runs; ++i) {
    replay_owned.push_back(apps::time_seconds([&] { (void)program.replay(input(i), owned); }));
  }
  const auto& stats = program.stats();
  json::object result{{"size", s.size()},
                      {"baby_steps", s.transform().baby_step()},
                      {"giant_steps", s.transform().giant_steps().size() + 1},
                      {"uncaptured", summary(eager)},
                      {"replay_with_staging", summary(replay)},
                      {"replay_with_owned_copy", summary(replay_owned)},
                      {"warmup_seconds", stats.warmup_seconds},
                      {"capture_seconds", stats.capture_seconds},
                      {"first_replay_seconds", stats.first_replay_seconds},
                      {"graph_operations", stats.operations},
                      {"graph_bytes", stats.graph_bytes},
                      {"stable_buffer_bytes", stats.buffer_bytes},
                      {"peak_backend_bytes", s.backend().memory_usage().peak_bytes}};
  const double speedup = result["uncaptured"].as_object()["median_ms"].as_double() /
                         result["replay_with_staging"].as_object()["median_ms"].as_double();
  result["speedup_replay_vs_uncaptured"] = speedup;
  program.close();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GraphProgram replay vs the uncaptured matvec evaluator (JSON out)"};
  std::string backend_name = "auto";
  std::string preset_name = "slots8192_scale40_levels7";
  std::vector<int> sizes{8, 64, 256};
  int runs = 100;
  int warmup = 3;
  app.add_option("--backend", backend_name, "backend name or plugin path; auto: cuda if it loads, else cpu");
  app.add_option("--preset", preset_name, "parameter preset")->check(CLI::IsMember(preset_names()));
  app.add_option("--sizes", sizes, "matrix dimensions")->delimiter(',');
  app.add_option("--runs", runs, "timed runs per path")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "warm-up runs before timing and before capture")->check(CLI::Range(0, 1000));
  CLI11_PARSE(app, argc, argv);
  try {
    apps::ChosenBackend chosen = apps::choose_backend(backend_name);
    if (!chosen.note.empty()) std::cerr << chosen.note << "\n";
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    json::array devices;
    for (const auto& d : chosen.devices) devices.emplace_back(d);
    const CkksParameters params = preset(preset_name);
    json::object out{{"benchmark", "graph_replay_matvec"},
                     {"machine", {{"host", host}, {"cpu", apps::cpu_model()}, {"devices", devices}}},
                     {"backend", chosen.backend->name()},
                     {"parameters",
                      {{"preset", preset_name},
                       {"ring_degree", std::size_t{1} << params.log_ring_degree},
                       {"q_primes", params.q_bits.size()},
                       {"p_primes", params.p_bits.size()},
                       {"level", params.max_level()}}},
                     {"timing", "wall clock around each call, synchronized (host waits for the backend)"}};
    json::array results;
    for (int size : sizes) {
      apps::MatvecSession s(params, size, chosen.backend);
      results.push_back(bench_size(s, runs, warmup));
      std::cerr << "size " << size << " done\n";
    }
    out["results"] = results;
    std::cout << json::serialize(out) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-graph: " << e.what() << "\n";
    return 1;
  }
}
