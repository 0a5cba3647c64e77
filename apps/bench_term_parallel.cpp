// Term-parallel y = M x (circuits::TermParallelTransform) on one rank and on
// one rank per listed device: the latency of each (median, min), the key
// switches per rank, the bytes the all-reduce moves, the error against the
// clear product and whether the residues equal the one-rank result. JSON out.
// A device may be listed twice (two ranks sharing it: on cpu, two backends).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <span>

#include "backend_choice.hpp"
#include "fhelium/circuits/term_parallel.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/params.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "op_bench.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Setup {
  std::shared_ptr<const Context> context;
  Csprng rng;
  KeyGenerator keygen{context, rng};
  SecretKey sk = keygen.secret_key();
  circuits::LinearTransform whole;
  std::map<long, HostSwitchKey> keys;  // one per rotation step of the whole transform
  std::vector<double> x;
  HostValue x_encrypted;

  Setup(const CkksParameters& params, std::size_t size)
      : context(Context::create(params)), whole(make_transform(size)), x(random_values(size, 2)) {
    for (long step : whole.rotation_steps()) keys.emplace(step, keygen.galois_key(sk, context->galois_element(step)));
    const Encoder encoder(context);
    Encryptor encryptor(context, rng);
    const auto packed = whole.pack(runtime::Slots(x.begin(), x.end()));
    x_encrypted =
        encryptor.encrypt(encoder.encode(packed, context->max_level(), context->params().scale), keygen.public_key(sk));
  }

  circuits::LinearTransform make_transform(std::size_t size) const {
    std::vector<std::vector<double>> m;
    for (std::size_t i = 0; i < size; ++i) m.push_back(random_values(size, i + 10));
    return circuits::LinearTransform::from_matrix(m, context->ring_degree() / 2);
  }

  static std::vector<double> random_values(std::size_t count, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    std::vector<double> v(count);
    for (auto& e : v) e = d(gen);
    return v;
  }

  double error(const HostValue& y) const {
    const auto expected = whole.apply_clear(whole.pack(runtime::Slots(x.begin(), x.end())));
    const auto got = Encoder(context).decode(Decryptor(context).decrypt(y, sk));
    double worst = 0;
    for (std::size_t j = 0; j < got.size(); ++j) worst = std::max(worst, std::abs(got[j] - expected[j]));
    return worst;
  }
};

// One configuration: `engines.size()` ranks, each its part's keys.
json::object measure(Setup& s, std::span<const std::unique_ptr<Engine>> engines, int runs, int warmup,
                     std::uint64_t& digest) {
  const auto ranks = engines.size();
  std::vector<double> ms;
  std::vector<std::size_t> key_switches(ranks);
  HostValue y;
  std::string transport;
  const auto stats = runtime::DeviceGroup(static_cast<int>(ranks)).run([&](runtime::Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    const Engine& engine = *engines[r];
    const bool device_collectives = comm.connect(engine);
    if (r == 0) transport = device_collectives ? "device collectives" : "host staging (" + comm.not_connected() + ")";
    std::vector<HostSwitchKey> mine;
    for (long step : circuits::TermParallelTransform::rotation_steps(s.whole, r, ranks))
      mine.push_back(s.keys.at(step));
    const GaloisKeys keys = engine.upload_galois_keys(mine);
    const circuits::TermParallelTransform t(s.whole, engine, s.x_encrypted.state, keys, r, ranks);
    key_switches[r] = t.key_switches();
    const Ciphertext x = engine.upload_ciphertext(s.x_encrypted);
    Ciphertext out;
    for (int i = 0; i < warmup + runs; ++i) {
      engine.backend().synchronize();
      comm.barrier();
      const auto start = Clock::now();
      out = t.apply(comm, x);
      engine.backend().synchronize();
      comm.barrier();
      if (r == 0 && i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    if (r == 0) y = engine.download(out);
  });
  digest = y.residue_digest();
  json::object result = apps::timing_summary(ms);
  result["ranks"] = ranks;
  result["key_switches_per_rank"] = json::value_from(key_switches);
  result["bytes_moved_per_apply"] =
      (stats[0].bytes_received + stats[0].bytes_sent) / static_cast<std::size_t>(warmup + runs);
  result["max_error"] = s.error(y);
  result["transport"] = transport;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Term-parallel matvec: latency on one rank and on one rank per device (JSON out)"};
  std::string backend_name = "auto";
  std::vector<int> devices{0};
  std::string preset_name = "slots8192_scale40_levels7";
  std::size_t size = 256;
  int runs = 10;
  int warmup = 2;
  app.add_option("--backend", backend_name, "backend name or plugin path; auto: cuda if it loads, else cpu");
  app.add_option("--devices", devices, "device per rank, e.g. 0,1 (a device may repeat)")->delimiter(',');
  app.add_option("--preset", preset_name, "parameter preset")->check(CLI::IsMember(preset_names()));
  app.add_option("--size", size, "matrix dimension (at most the slot count)");
  app.add_option("--runs", runs, "timed runs")->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  try {
    Setup s(preset(preset_name), size);
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<std::string> described;
    for (int device : devices) {
      apps::ChosenBackend chosen = apps::choose_backend(backend_name, device);
      if (!chosen.note.empty()) std::cerr << chosen.note << "\n";
      described.insert(described.end(), chosen.devices.begin(), chosen.devices.end());
      engines.push_back(std::make_unique<Engine>(s.context, chosen.backend));
    }
    json::array results;
    std::uint64_t one_rank = 0;
    std::vector<std::size_t> rank_counts{1};
    if (engines.size() > 1) rank_counts.push_back(engines.size());
    for (std::size_t ranks : rank_counts) {
      std::uint64_t digest = 0;
      json::object result = measure(s, std::span(engines).first(ranks), runs, warmup, digest);
      if (ranks == 1) one_rank = digest;
      result["bit_identical_to_one_rank"] = digest == one_rank;
      results.push_back(std::move(result));
    }
    json::object out{{"bench", "term_parallel_matvec"},
                     {"backend", engines.front()->backend().name()},
                     {"devices", json::value_from(devices)},
                     {"preset", preset_name},
                     {"size", size},
                     {"baby_step", s.whole.baby_step()},
                     {"giant_groups", s.whole.giant_groups()},
                     {"machine", json::object{{"cpu", apps::cpu_model()}, {"devices", json::value_from(described)}}},
                     {"results", std::move(results)}};
    std::cout << json::serialize(out) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-term-parallel: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
