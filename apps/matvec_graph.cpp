// The GraphProgram reference example (the C++ counterpart of the Python
// FHElium's examples/18_runtime_cuda_graph.py): y = A x by the cyclic-diagonal
// method with the encoded diagonals and rotation keys bound as static state,
// captured once and replayed on several freshly encrypted vectors. Prints a
// JSON record of the uncaptured baseline and of every replay: error against
// the clear product, output level, actual scale, domain, basis, components,
// synchronized latency and peak backend memory.
#include <CLI/CLI.hpp>

#include <boost/json.hpp>
#include <cmath>
#include <iostream>

#include "backend_choice.hpp"
#include "fhelium/params.hpp"
#include "matvec_session.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

json::object record(apps::MatvecSession& s, const Ciphertext& y, const std::vector<double>& x, double seconds,
                    bool bit_identical) {
  return {{"error", s.error(y, x)},
          {"level", y.state.level},
          {"scale", y.state.scale},
          {"scale_log2", std::log2(y.state.scale)},
          {"domain", to_string(y.state.domain)},
          {"basis", to_string(y.state.basis)},
          {"components", y.state.components},
          {"latency_ms", seconds * 1e3},
          {"bit_identical_to_uncaptured", bit_identical},
          {"peak_backend_bytes", s.backend().memory_usage().peak_bytes}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Capture the matvec evaluator once as a GraphProgram and replay it on fresh ciphertexts (JSON out)"};
  std::string backend_name = "auto";
  std::string preset_name = "slots8192_scale40_levels7";
  int size = 64;
  int replays = 4;
  int warmup = 2;
  app.add_option("--backend", backend_name, "backend name or plugin path; auto: cuda if it loads, else cpu");
  app.add_option("--preset", preset_name, "parameter preset")->check(CLI::IsMember(preset_names()));
  app.add_option("--size", size, "matrix dimension (a power of two up to the slot count)");
  app.add_option("--replays", replays, "replays on freshly encrypted vectors")->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "uncaptured warm-up runs before capture")->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  try {
    apps::ChosenBackend chosen = apps::choose_backend(backend_name);
    if (!chosen.note.empty()) std::cerr << chosen.note << "\n";
    apps::MatvecSession s(preset(preset_name), size, chosen.backend);
    json::object out{{"example", "matvec_graph"}, {"backend", s.backend().name()}, {"preset", preset_name},
                     {"size", size}, {"baby_steps", s.transform().baby_step()}, {"giant_steps", s.transform().giant_steps().size() + 1},
                     {"rotation_keys", s.transform().rotation_steps().size()}};
    json::array devices;
    for (const auto& d : chosen.devices) devices.emplace_back(d);
    out["devices"] = devices;

    // 1. The uncaptured baseline (after one untimed run that builds tables).
    const std::vector<double> x0 = s.random_vector();
    const runtime::ValueTree in0 = s.encrypt(x0);
    (void)s.executable().run(in0);
    runtime::ValueTree baseline;
    const double baseline_seconds = apps::time_seconds([&] {
      baseline = s.executable().run(in0);
      s.backend().synchronize();
    });
    out["baseline"] = record(s, baseline.at("y").ciphertext(), x0, baseline_seconds, true);

    // 2. Capture (static state: diagonals and keys live in the executable).
    runtime::CaptureOptions capture_options;
    capture_options.warmup = warmup;
    runtime::GraphProgram program =
        runtime::GraphProgram::capture(s.backend(), s.context(), s.schedule(), in0, capture_options);
    const runtime::CaptureStats& stats = program.stats();
    out["capture"] = {{"recorded_by", stats.backend},        {"warmup_seconds", stats.warmup_seconds},
                      {"capture_seconds", stats.capture_seconds}, {"first_replay_seconds", stats.first_replay_seconds},
                      {"graph_bytes", stats.graph_bytes},      {"buffer_bytes", stats.buffer_bytes},
                      {"operations", stats.operations}};

    // 3. Replays on fresh encryptions, each checked against the clear product
    //    and the uncaptured evaluator on the same ciphertext.
    json::array records;
    bool all_identical = true;
    double worst = 0;
    for (int r = 0; r < replays; ++r) {
      const std::vector<double> x = s.random_vector();
      const runtime::ValueTree in = s.encrypt(x);
      runtime::ValueTree y;
      const double seconds = apps::time_seconds([&] { y = program.replay(in); });
      const Ciphertext& out_y = y.at("y").ciphertext();
      const bool identical = s.engine().download(out_y).data ==
                             s.engine().download(s.executable().run(in).at("y").ciphertext()).data;
      all_identical = all_identical && identical;
      json::object rec = record(s, out_y, x, seconds, identical);
      worst = std::max(worst, rec["error"].as_double());
      records.push_back(std::move(rec));
    }
    out["replays"] = records;
    program.close();
    out["max_error"] = worst;
    out["all_bit_identical"] = all_identical;
    std::cout << json::serialize(out) << "\n";
    return all_identical && worst < 1e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "fhelium-matvec-graph: " << e.what() << "\n";
    return 1;
  }
}
