// Times the CUDA backend's operations and prints JSON: per operation the
// median and minimum over many runs (CUDA events on the backend's stream,
// after a warm-up), eagerly and as a replayed CUDA graph, with the minimum
// bytes the operation must move and the time that implies at 4.3 TB/s.
// Backend methods run directly on buffers allocated before timing, rotating
// among several input sets so that repeated runs do not just hit L2. Not a test.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <random>

#include "fhelium/backend/residue_transfer.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

// The operations bench_preset times, in its order (it checks that they agree).
const std::vector<std::string> operation_names = {
    "add",         "multiply",             "multiply_plain",            "rescale", "ntt_forward_ciphertext",
    "ntt_inverse_ciphertext", "relinearize", "multiply_relinearize", "multiply_then_relinearize",
    "multiply_relinearize_rescale", "multiply_relinearize_then_rescale", "rotate", "rotate_hoisted_per_rotation"};

constexpr double bandwidth_bytes_per_second = 4.3e12;  // measured device-to-device copy on the H200

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

json::object machine(int device) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return {{"gpu", p.name},
          {"memory_bytes", p.totalGlobalMem},
          {"multiprocessors", p.multiProcessorCount},
          {"l2_bytes", p.l2CacheSize},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"driver_version", driver},
          {"runtime_version", runtime}};
}

struct Stats {
  double median_us;
  double min_us;
};

Stats summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const std::size_t m = us.size() / 2;
  const double median = us.size() % 2 ? us[m] : 0.5 * (us[m - 1] + us[m]);
  return {median, us.front()};
}

// Times op(run) with events around each run, after `warmup` untimed runs.
Stats time_eager(cudaStream_t stream, int runs, int warmup, const std::function<void(int)>& op) {
  for (int i = 0; i < warmup; ++i) op(i);
  std::vector<cudaEvent_t> start(static_cast<std::size_t>(runs)), stop(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    check(cudaEventCreate(&start[static_cast<std::size_t>(i)]), "cudaEventCreate");
    check(cudaEventCreate(&stop[static_cast<std::size_t>(i)]), "cudaEventCreate");
  }
  for (int i = 0; i < runs; ++i) {
    check(cudaEventRecord(start[static_cast<std::size_t>(i)], stream), "cudaEventRecord");
    op(i);
    check(cudaEventRecord(stop[static_cast<std::size_t>(i)], stream), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start[static_cast<std::size_t>(i)], stop[static_cast<std::size_t>(i)]),
          "cudaEventElapsedTime");
    us.push_back(1e3 * ms);
    cudaEventDestroy(start[static_cast<std::size_t>(i)]);
    cudaEventDestroy(stop[static_cast<std::size_t>(i)]);
  }
  return summarize(us);
}

// The host's time to issue one call: `calls` calls issued back to back on an
// idle stream (few enough that no launch queue fills), wall clock / calls.
// When it exceeds the GPU's time, the eager median measures the host.
double host_issue_us(cudaStream_t stream, int calls, const std::function<void(int)>& op) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) op(i);
  const std::chrono::duration<double, std::micro> issued = std::chrono::steady_clock::now() - start;
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return issued.count() / calls;
}

// Captures op(set) for every input set into a CUDA graph, then times replays.
Stats time_graph(cudaStream_t stream, int sets, int runs, int warmup, const std::function<void(int)>& op) {
  std::vector<cudaGraphExec_t> execs;
  for (int s = 0; s < sets; ++s) {
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      op(s);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    // The backend's side stream runs at a higher priority: keep it in the graph.
    check(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority), "cudaGraphInstantiate");
    cudaGraphDestroy(graph);
    execs.push_back(exec);
  }
  const Stats stats = time_eager(stream, runs, warmup, [&](int i) {
    check(cudaGraphLaunch(execs[static_cast<std::size_t>(i % sets)], stream), "cudaGraphLaunch");
  });
  for (auto e : execs) cudaGraphExecDestroy(e);
  return stats;
}

json::object bench_preset(const std::string& name, int at_level, int runs, int warmup, int sets, int hoisted,
                          int device, const std::vector<std::string>& only, bool graphs) {
  const auto context = Context::create(preset(name));
  const Context& ctx = *context;
  auto backend = cuda::make_cuda_backend({device});
  auto stream = static_cast<cudaStream_t>(cuda::native_stream(*backend));
  const auto prepared = backend->prepare(context);
  const BackendContext& bc = *prepared;
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  Encoder encoder(context);
  Encryptor encryptor(context, rng);

  // A bootstrap's key switches run at every level, most of them far below the top.
  const int level = at_level < 0 ? ctx.max_level() : at_level;
  if (level < 1 || level > ctx.max_level()) {
    throw InvalidArgumentError("--level " + std::to_string(at_level) + " of " + name + ": expected 1 to " +
                               std::to_string(ctx.max_level()) + " (rescale needs a level below it)");
  }
  const int limbs = ctx.level_basis(level).count;
  const std::size_t n = ctx.ring_degree();
  const std::size_t limb_bytes = n * stored_word_bytes(ctx.word_size());
  const std::size_t poly_bytes = static_cast<std::size_t>(limbs) * limb_bytes;
  const double scale = ctx.params().scale;

  auto upload = [&](const std::vector<u64>& residues) {
    auto b = backend->allocate(residues.size() * stored_word_bytes(ctx.word_size()));
    upload_residues(*backend, *b, residues, ctx.word_size());
    return b;
  };
  const HostSwitchKey relin_host = keygen.relinearization_key(sk);
  const auto relin = upload(relin_host.data);
  std::vector<std::shared_ptr<Buffer>> galois;
  std::vector<std::uint32_t> elements;
  for (int r = 1; r <= hoisted; ++r) {
    elements.push_back(ctx.galois_element(r));
    galois.push_back(upload(keygen.galois_key(sk, elements.back()).data));
  }
  const int digits = ctx.key_digits();
  const int digits_used = ctx.key_switch(level).digits;
  const KeyArg rk{relin.get(), digits};
  std::vector<KeyArg> gk;
  for (const auto& g : galois) gk.push_back({g.get(), digits});

  // Input and output sets.
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  struct Set {
    std::shared_ptr<Buffer> a, b, p, a3, a_coeff, out2, out3, out_rescaled;
    std::vector<std::shared_ptr<Buffer>> outs;
  };
  std::vector<Set> in(static_cast<std::size_t>(sets));
  for (auto& s : in) {
    std::vector<std::complex<double>> m(n / 2);
    for (auto& x : m) x = {dist(gen), dist(gen)};
    const HostValue pt = encoder.encode(m, level, scale);
    s.a = upload(encryptor.encrypt(pt, pk).data);
    s.b = upload(encryptor.encrypt(pt, pk).data);
    s.p = upload(pt.data);
    s.a3 = backend->allocate(3 * poly_bytes);
    s.a_coeff = backend->allocate(2 * poly_bytes);
    s.out2 = backend->allocate(2 * poly_bytes);
    s.out3 = backend->allocate(3 * poly_bytes);
    s.out_rescaled = backend->allocate(2 * poly_bytes);
    for (int r = 0; r < hoisted; ++r) s.outs.push_back(backend->allocate(2 * poly_bytes));
    backend->multiply(bc, {s.a3.get(), 3, limbs}, {s.a.get(), 2, limbs}, {s.b.get(), 2, limbs});
    backend->to_coefficient(bc, {s.a_coeff.get(), 2, limbs}, {s.a.get(), 2, limbs});
  }
  backend->synchronize();
  auto A = [&](int i) { return PolyArg{in[static_cast<std::size_t>(i % sets)].a.get(), 2, limbs}; };
  auto B = [&](int i) { return PolyArg{in[static_cast<std::size_t>(i % sets)].b.get(), 2, limbs}; };
  auto S = [&](int i) -> Set& { return in[static_cast<std::size_t>(i % sets)]; };

  const double key_bytes =
      static_cast<double>(digits_used) * 2.0 * (limbs + ctx.special_count()) * static_cast<double>(limb_bytes);
  const double pb = static_cast<double>(poly_bytes);
  const int rescaled_limbs = ctx.level_basis(level - 1).count;
  const double rescaled_bytes = 2 * pb * rescaled_limbs / limbs;
  auto rescaled = [&](int i) { return PolyArg{S(i).out_rescaled.get(), 2, rescaled_limbs}; };
  struct Op {
    std::string name;
    double min_bytes;
    int per;  // results reported per this many items (hoisted rotations)
    std::function<void(int)> run;
  };
  std::vector<Op> ops = {
      {"add", 6 * pb, 1, [&](int i) { backend->add(bc, {S(i).out2.get(), 2, limbs}, A(i), B(i)); }},
      {"multiply", 7 * pb, 1, [&](int i) { backend->multiply(bc, {S(i).out3.get(), 3, limbs}, A(i), B(i)); }},
      {"multiply_plain", 5 * pb, 1,
       [&](int i) { backend->multiply_plain(bc, {S(i).out2.get(), 2, limbs}, A(i), {S(i).p.get(), 1, limbs}); }},
      {"rescale", 2 * pb + rescaled_bytes, 1, [&](int i) { backend->rescale(bc, rescaled(i), A(i)); }},
      {"ntt_forward_ciphertext", 4 * pb, 1,
       [&](int i) { backend->to_ntt(bc, {S(i).out2.get(), 2, limbs}, {S(i).a_coeff.get(), 2, limbs}); }},
      {"ntt_inverse_ciphertext", 4 * pb, 1,
       [&](int i) { backend->to_coefficient(bc, {S(i).out2.get(), 2, limbs}, A(i)); }},
      {"relinearize", 5 * pb + key_bytes, 1,
       [&](int i) { backend->relinearize(bc, {S(i).out2.get(), 2, limbs}, {S(i).a3.get(), 3, limbs}, rk); }},
      {"multiply_relinearize", 6 * pb + key_bytes, 1,
       [&](int i) { backend->multiply_relinearize(bc, {S(i).out2.get(), 2, limbs}, A(i), B(i), rk); }},
      {"multiply_then_relinearize", 6 * pb + key_bytes, 1,
       [&](int i) {
         backend->multiply(bc, {S(i).out3.get(), 3, limbs}, A(i), B(i));
         backend->relinearize(bc, {S(i).out2.get(), 2, limbs}, {S(i).out3.get(), 3, limbs}, rk);
       }},
      {"multiply_relinearize_rescale", 4 * pb + rescaled_bytes + key_bytes, 1,
       [&](int i) { backend->multiply_relinearize_rescale(bc, rescaled(i), A(i), B(i), rk); }},
      {"multiply_relinearize_then_rescale", 4 * pb + rescaled_bytes + key_bytes, 1,
       [&](int i) {
         backend->multiply_relinearize(bc, {S(i).out2.get(), 2, limbs}, A(i), B(i), rk);
         backend->rescale(bc, rescaled(i), {S(i).out2.get(), 2, limbs});
       }},
      {"rotate", 4 * pb + key_bytes, 1,
       [&](int i) { backend->rotate(bc, {S(i).out2.get(), 2, limbs}, A(i), elements[0], gk[0]); }},
      {"rotate_hoisted_per_rotation", 2 * pb / hoisted + key_bytes + 2 * pb, hoisted,
       [&](int i) {
         std::vector<PolyArg> outs;
         for (auto& o : S(i).outs) outs.push_back({o.get(), 2, limbs});
         backend->rotate_hoisted(bc, outs, A(i), elements, gk);
       }},
  };

  std::vector<std::string> names;
  for (const auto& op : ops) names.push_back(op.name);
  if (names != operation_names) throw Error("fhelium-bench-cuda: operation_names is out of date");
  json::array results;
  for (const auto& op : ops) {
    if (!only.empty() && std::find(only.begin(), only.end(), op.name) == only.end()) continue;
    const Stats eager = time_eager(stream, runs, warmup, op.run);
    json::object r{{"op", op.name},
                   {"median_us", eager.median_us / op.per},
                   {"min_us", eager.min_us / op.per},
                   {"runs", runs},
                   {"min_bytes", op.min_bytes},
                   {"floor_us_at_4.3TBps", 1e6 * op.min_bytes / bandwidth_bytes_per_second},
                   {"median_over_floor", eager.median_us / op.per / (1e6 * op.min_bytes / bandwidth_bytes_per_second)}};
    if (op.per > 1) r["rotations"] = op.per;
    r["host_issue_us"] = host_issue_us(stream, 8, op.run) / op.per;
    if (graphs) {
      try {
        const Stats graph = time_graph(stream, sets, runs, warmup, op.run);
        r["graph_median_us"] = graph.median_us / op.per;
        r["graph_min_us"] = graph.min_us / op.per;
      } catch (const std::exception& e) {
        r["graph_error"] = e.what();
      }
    }
    std::cerr << name << " " << op.name << ": " << eager.median_us / op.per << " us\n";
    results.push_back(std::move(r));
  }
  const auto& p = ctx.params();
  return {{"preset", name},
          {"parameters",
           {{"ring_degree", n},
            {"q_bits", json::value_from(p.q_bits)},
            {"p_bits", json::value_from(p.p_bits)},
            {"log_scale", std::log2(p.scale)},
            {"log_qp", ctx.log_qp()},
            {"key_digits", digits},
            {"key_digits_at_level", digits_used},
            {"level", level},
            {"limbs", limbs}}},
          {"input_sets", sets},
          {"results", std::move(results)}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium CUDA operation benchmark (JSON on stdout)"};
  std::vector<std::string> presets = {"slots8192_scale40_levels7", "slots32768_scale40_levels34"};
  int runs = 200;
  int warmup = 20;
  int sets = 4;
  int hoisted = 4;
  int device = 0;
  int level = -1;
  std::vector<std::string> only;
  bool no_graph = false;
  app.add_option("--preset", presets, "Presets to measure")->expected(1, -1);
  app.add_option("--runs", runs, "Timed runs per operation")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Untimed runs first");
  app.add_option("--sets", sets, "Input sets to rotate among")->check(CLI::PositiveNumber);
  app.add_option("--hoisted", hoisted, "Rotations in the hoisted batch")->check(CLI::PositiveNumber);
  app.add_option("--device", device, "CUDA device");
  app.add_option("--level", level, "Level of the inputs (default: each preset's top)");
  app.add_option("--ops", only, "Only these operations (default: all)")
      ->expected(1, -1)
      ->check(CLI::IsMember(operation_names));
  app.footer("Operations: " + [] {
    std::string list;
    for (const auto& name : operation_names) list += (list.empty() ? "" : ", ") + name;
    return list;
  }());
  app.add_flag("--no-graph", no_graph, "Skip the graph-replay timings");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!cuda::device_available()) throw BackendError("no CUDA device present");
    json::array out;
    for (const auto& p : presets)
      out.push_back(bench_preset(p, level, runs, warmup, sets, hoisted, device, only, !no_graph));
    std::cout << json::serialize(json::object{{"benchmark", "fhelium-cuda-ops"},
                                              {"timing", "CUDA events around each call on the backend stream; "
                                                         "Backend methods on pre-allocated buffers; eager and graph replay"},
                                              {"machine", machine(device)},
                                              {"presets", std::move(out)}})
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-cuda: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
