// Running a compiled pipeline: keys, encryption, the calculation (one
// Executable: node by node with each step timed, or program, or graph),
// decryption, errors against the clear calculation.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/random.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "fhelium/runtime/evaluation_keys.hpp"
#include "fhelium/runtime/graph_program.hpp"
#include "fhelium/runtime/program.hpp"
#include "fhelium/security.hpp"
#include "fhelium/serialization.hpp"
#include "pipeline_internal.hpp"

namespace fhelium::runtime {
namespace {

using namespace pipeline_detail;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ErrorStats error_stats(const Slots& expected, const Slots& actual, const std::vector<std::size_t>& slots) {
  ErrorStats e;
  double sum = 0, sum_squares = 0;
  for (std::size_t j : slots) {
    const double d = std::abs(expected[j] - actual[j]);
    e.max = std::max(e.max, d);
    e.max_expected = std::max(e.max_expected, std::abs(expected[j]));
    sum += d;
    sum_squares += d * d;
  }
  e.count = slots.size();
  if (e.count) {
    e.mean = sum / static_cast<double>(e.count);
    e.rms = std::sqrt(sum_squares / static_cast<double>(e.count));
  }
  e.bits = e.max > 0 ? std::min(53.0, -std::log2(e.max)) : 53.0;
  return e;
}

std::vector<std::size_t> slot_indices(std::size_t count, std::size_t stride) {
  std::vector<std::size_t> out(count);
  for (std::size_t k = 0; k < count; ++k) out[k] = k * stride;
  return out;
}

Seed seed_from(std::uint64_t value) {
  Seed seed{};
  for (std::size_t i = 0; i < 8; ++i) seed[i] = static_cast<std::uint8_t>(value >> (8 * i));
  seed[8] = 0x46;  // 'F': not an all-zero key for seed 0
  return seed;
}

// Everything a run holds on the host and the backend.
class Runner {
 public:
  Runner(const PipelineSpec& spec, const RunOptions& options, Compiled compiled)
      : spec_(spec), options_(options), c_(std::move(compiled)), context_(c_.plan.context) {}

  PipelineReport run() {
    const auto started = Clock::now();
    fill_plan_report();
    // The Program is prepared before the backend is created or anything encrypted.
    prepare_program();
    const std::vector<std::shared_ptr<Backend>> backends = make_backends();
    engine_ = std::make_unique<Engine>(context_, backends.front());
    report_.backend = backends.front()->name();
    encoder_ = std::make_unique<Encoder>(context_);
    if (server()) {
      load_keys();
      load_inputs();
    } else {
      rng_ = spec_.execution.seed ? std::make_unique<Csprng>(seed_from(*spec_.execution.seed))
                                  : std::make_unique<Csprng>();
      make_keys();
      encryptor_ = std::make_unique<Encryptor>(context_, *rng_);
      decryptor_ = std::make_unique<Decryptor>(context_);
    }

    if (backends.size() > 1) {
      run_data_parallel(backends);
    } else {
      switch (spec_.execution.mode) {
        case ExecutionMode::eager:
          run_eager();
          break;
        case ExecutionMode::program:
          run_program();
          break;
        case ExecutionMode::graph:
          run_graph();
          break;
      }
    }
    engine_->backend().synchronize();
    report_.backend_peak_bytes = engine_->backend().memory_usage().peak_bytes;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    report_.process_peak_bytes = static_cast<std::size_t>(usage.ru_maxrss) * 1024;
    finish_outputs();
    report_.wall_seconds = ms_since(started) / 1000.0;
    return std::move(report_);
  }

 private:
  void progress(const std::string& phase, std::size_t done, std::size_t total, const std::string& detail = "") {
    if (options_.progress) options_.progress({phase, done, total, detail});
  }

  // One backend per device (the spec's device when RunOptions.devices is empty).
  std::vector<std::shared_ptr<Backend>> make_backends() {
    if (!options_.backend_factory) throw InvalidArgumentError("run_pipeline: RunOptions.backend_factory is not set");
    const std::vector<int> devices =
        options_.devices.empty() ? std::vector<int>{spec_.backend.device} : options_.devices;
    for (int device : devices) {  // a device named twice runs two ranks (on cpu: two backends)
      if (device < 0) throw InvalidArgumentError("device " + std::to_string(device) + ": expected an index >= 0");
    }
    if (devices.size() > 1 && spec_.execution.mode == ExecutionMode::eager) {
      throw PipelineError(spec_.execution.mark, "execution.mode",
                          "mode eager times each step on one device; with several devices use mode program or graph "
                          "(the repetitions are dealt over the devices)");
    }
    std::vector<std::shared_ptr<Backend>> backends;
    for (int device : devices) {
      BackendSpec spec = spec_.backend;
      spec.device = device;
      std::shared_ptr<Backend> backend = options_.backend_factory(spec);
      if (!backend) throw InvalidArgumentError("run_pipeline: the backend factory returned no backend");
      if (spec_.execution.mode == ExecutionMode::graph && !backend->supports_capture()) {
        throw PipelineError(spec_.execution.mark, "execution.mode",
                            "mode graph needs a backend that can capture and replay, and backend '" + backend->name() +
                                "' cannot (supports_capture() is false): use mode program or another backend");
      }
      backends.push_back(std::move(backend));
    }
    report_.device = devices.front();
    if (devices.size() > 1) {
      report_.data_parallel.emplace();
      report_.data_parallel->devices = devices;
    }
    return backends;
  }

  void fill_plan_report() {
    const PipelinePlan& plan = c_.plan;
    report_.name = spec_.name;
    report_.file = spec_.file;
    report_.device = spec_.backend.device;
    report_.preset = spec_.params.preset;
    report_.parameters = context_->params();
    report_.log_qp = context_->log_qp();
    report_.security_budget =
        max_log_qp(context_->params().secret, context_->params().security_bits, context_->ring_degree());
    report_.mode = spec_.execution.mode;
    report_.repetitions = spec_.execution.repetitions;
    report_.warmup = spec_.execution.warmup;
    report_.depth = plan.depth;
    report_.operations = plan.operations;
    report_.relinearization_key = plan.keys.relinearization;
    report_.conjugation_key = plan.keys.conjugation;
    report_.rotation_steps = plan.keys.rotation_steps;
    for (const PlannedStep& p : plan.steps) report_.steps.push_back({p, std::nullopt, std::nullopt});
  }

  // ---- keys and inputs ----

  const ServerSide* server() const { return options_.server ? &*options_.server : nullptr; }

  // The server side: exactly the evaluation keys the program needs, from the key folder.
  void load_keys() {
    const auto start = Clock::now();
    keys_.emplace(EvaluationKeys::load(prepared_->required_keys(), *engine_, server()->keys_dir));
    report_.key_bytes = keys_->bytes();
    engine_->backend().synchronize();
    report_.keygen_ms = ms_since(start);
  }

  // The server side: every encrypted input the calculation reads, from its
  // ciphertext file, in the state the plan gives it.
  void load_inputs() {
    std::set<std::string> inputs;
    for (const auto& [name, v] : c_.named) {
      if (v.input < 0 || !v.encrypted) continue;
      inputs.insert(name);
      const auto file = server()->input_ciphertexts.find(name);
      if (file == server()->input_ciphertexts.end()) {
        throw InvalidArgumentError("input '" + name + "' is encrypted and has no ciphertext file: pass --input " +
                                   name + "=FILE");
      }
      HostValue ct = load_ciphertext_file(file->second, *context_);
      const ValueState& got = ct.state;
      const ValueState& expected = c_.builder.state(v.ref);
      if (got.level != expected.level || !same_scale(got.scale, expected.scale) ||
          got.components != expected.components) {
        throw StateError("ciphertext file '" + file->second + "' for input '" + name + "' is " + got.describe() +
                         ", expected level " + std::to_string(expected.level) + " and scale 2^" +
                         std::to_string(std::log2(expected.scale)) + " as the pipeline encrypts it");
      }
      loaded_inputs_[name] = std::move(ct);
    }
    for (const auto& [name, file] : server()->input_ciphertexts) {
      if (!inputs.count(name)) {
        throw InvalidArgumentError("--input " + name + "=" + file + ": the pipeline has no encrypted input '" + name +
                                   "'");
      }
    }
    for (const auto& entry : server()->output_ciphertexts) {
      const std::string& name = entry.first;
      const bool known = std::any_of(spec_.outputs.begin(), spec_.outputs.end(),
                                     [&](const OutputSpec& o) { return o.name == name || o.value == name; });
      if (!known) {
        throw InvalidArgumentError("--output " + name + "=" + entry.second + ": the pipeline has no output '" + name +
                                   "'");
      }
    }
  }

  void make_keys() {
    const auto start = Clock::now();
    KeyGenerator keygen(context_, *rng_);
    sk_ = std::make_unique<SecretKey>(keygen.secret_key());
    pk_ = keygen.public_key(*sk_);
    keys_.emplace(EvaluationKeys::generate(
        prepared_->required_keys(), *engine_, keygen, *sk_, *rng_,
        [this](std::size_t done, std::size_t total, const std::string& key) { progress("keys", done, total, key); }));
    report_.key_bytes = keys_->bytes();
    engine_->backend().synchronize();
    report_.keygen_ms = ms_since(start);
  }

  // Fresh encryptions of every encrypted input (the server side: the loaded ones), by name.
  std::map<std::string, HostValue> host_inputs() {
    std::map<std::string, HostValue> out;
    for (const auto& [name, v] : c_.named) {
      if (v.input < 0 || !v.encrypted) continue;
      if (server()) {
        out.emplace(name, loaded_inputs_.at(name));
        continue;
      }
      const ValueState& s = c_.builder.state(v.ref);
      const HostValue pt = encoder_->encode(c_.input_slots[static_cast<std::size_t>(v.input)], s.level, s.scale);
      out.emplace(name, encryptor_->encrypt(pt, pk_));
    }
    return out;
  }

  static ValueTree::Map upload_inputs(const Engine& engine, const std::map<std::string, HostValue>& inputs) {
    ValueTree::Map out;
    for (const auto& [name, value] : inputs) out.emplace(name, engine.upload_ciphertext(value));
    engine.backend().synchronize();
    return out;
  }

  ValueTree::Map encrypt_inputs() { return upload_inputs(*engine_, host_inputs()); }

  Slots decrypt(const HostValue& value) const { return encoder_->decode(decryptor_->decrypt(value, *sk_)); }

  // A value of one repetition: an input as encrypted, or a result from the run's tree.
  HostValue download(const ValueTree::Map& inputs, const ValueTree& out, const std::string& name) const {
    const auto input = inputs.find(name);
    if (input != inputs.end()) return engine_->download(input->second.ciphertext());
    return engine_->download(out.at(name).ciphertext());
  }

  // ---- the Program, prepared once for every mode ----

  // Outputs: in eager mode every step result (timed and checked step by
  // step), otherwise the pipeline's computed outputs.
  void prepare_program() {
    ProgramBuilder& b = c_.builder;
    std::set<std::string> outputs;
    if (spec_.execution.mode == ExecutionMode::eager) {
      for (const auto& names : c_.step_results) outputs.insert(names.begin(), names.end());
    }
    for (const OutputSpec& o : spec_.outputs) {
      if (c_.named.at(o.value).input < 0) outputs.insert(o.value);  // an input is decrypted directly
    }
    if (outputs.empty()) {
      throw PipelineError(
          spec_.outputs.front().mark, spec_.outputs.front().key,
          "in " + to_string(spec_.execution.mode) + " mode at least one output must be a computed value");
    }
    for (const std::string& name : outputs) b.output(name, c_.named.at(name).ref);
    prepared_ = std::make_unique<PreparedProgram>(b.prepare());
  }

  Executable make_executable() {
    Materials materials = keys_->materials();
    for (const auto& [name, values] : c_.builder.constant_values()) materials.constants[name] = values;
    return link(*prepared_, *engine_, materials);
  }

  // Runs `exe`, calling step_done(s) for each step s, in order, once its last
  // node has been issued (a step of no node at once).
  template <class StepDone>
  ValueTree run_by_steps(const Executable& exe, const ValueTree::Map& inputs, StepDone step_done) {
    std::size_t step = 0;
    const auto finish_steps = [&](std::size_t nodes_done) {
      for (; step < spec_.steps.size() && c_.step_nodes[step].second <= nodes_done; ++step) step_done(step);
    };
    finish_steps(0);
    ValueTree out = exe.run(ValueTree(inputs), [&](std::size_t node) { finish_steps(node + 1); });
    finish_steps(c_.builder.node_count());
    return out;
  }

  // ---- eager: the Program node by node, each step timed ----

  void run_eager() {
    const auto setup = Clock::now();
    const Executable exe = make_executable();
    engine_->backend().synchronize();
    report_.setup_ms = ms_since(setup);
    const int total = spec_.execution.repetitions + spec_.execution.warmup;
    const std::size_t steps = spec_.steps.size();
    std::vector<std::vector<double>> step_ms(steps);
    std::vector<double> encrypt_ms;
    for (int rep = 0; rep < total; ++rep) {
      const bool timed = rep >= spec_.execution.warmup;
      const auto enc = Clock::now();
      const ValueTree::Map inputs = encrypt_inputs();
      encrypt_ms.push_back(ms_since(enc));
      const auto run_start = Clock::now();
      auto step_start = run_start;
      const ValueTree out = run_by_steps(exe, inputs, [&](std::size_t step) {
        engine_->backend().synchronize();
        if (timed) step_ms[step].push_back(ms_since(step_start));
        step_start = Clock::now();
        progress(timed ? "run" : "warmup", static_cast<std::size_t>(rep) * steps + step + 1,
                 static_cast<std::size_t>(total) * steps, spec_.steps[step].name);
      });
      if (!timed) continue;
      report_.total_ms.push_back(ms_since(run_start));
      const bool last = rep + 1 == total;
      collect_outputs([&](const std::string& name) { return download(inputs, out, name); });
      if (last && spec_.report.step_errors && !server()) {
        for (std::size_t s = 0; s < steps; ++s) {
          Slots expected, actual;
          std::vector<std::size_t> slots;
          for (const std::string& name : c_.step_results[s]) {
            const NamedValue& nv = c_.named.at(name);
            const Slots got = decrypt(download(inputs, out, name));
            for (std::size_t j = 0; j < std::max<std::size_t>(nv.length, 1); ++j) {
              slots.push_back(expected.size());
              expected.push_back(nv.clear[j]);
              actual.push_back(got[j]);
            }
          }
          report_.steps[s].error = error_stats(expected, actual, slots);
        }
      }
    }
    for (std::size_t s = 0; s < steps; ++s) report_.steps[s].median_ms = median(step_ms[s]);
    report_.encrypt_ms = median(encrypt_ms);
  }

  // ---- program and graph: one Executable ----

  // Each step is timed by the backend's timing events, recorded after its
  // last node without waiting: the run is not slowed down to be measured.
  void run_program() {
    const auto setup = Clock::now();
    const Executable exe = make_executable();
    Backend& backend = engine_->backend();
    backend.synchronize();
    report_.setup_ms = ms_since(setup);
    const int total = spec_.execution.repetitions + spec_.execution.warmup;
    const std::size_t steps = spec_.steps.size();
    std::vector<std::shared_ptr<Event>> step_end(steps + 1);  // [0]: the start
    for (auto& event : step_end) event = backend.create_timing_event();
    std::vector<std::vector<double>> step_ms(steps);
    std::vector<double> encrypt_ms;
    for (int rep = 0; rep < total; ++rep) {
      const bool timed = rep >= spec_.execution.warmup;
      const auto enc = Clock::now();
      const ValueTree::Map inputs = encrypt_inputs();
      encrypt_ms.push_back(ms_since(enc));
      const auto start = Clock::now();
      backend.record_event(*step_end[0], nullptr);
      const ValueTree out =
          run_by_steps(exe, inputs, [&](std::size_t step) { backend.record_event(*step_end[step + 1], nullptr); });
      backend.synchronize();
      const double ms = ms_since(start);
      progress(timed ? "run" : "warmup", static_cast<std::size_t>(rep + 1), static_cast<std::size_t>(total));
      if (!timed) continue;
      report_.total_ms.push_back(ms);
      for (std::size_t s = 0; s < steps; ++s) {
        step_ms[s].push_back(backend.elapsed_seconds(*step_end[s], *step_end[s + 1]) * 1e3);
      }
      collect_outputs([&](const std::string& name) { return download(inputs, out, name); });
    }
    for (std::size_t s = 0; s < steps; ++s) report_.steps[s].median_ms = median(step_ms[s]);
    report_.encrypt_ms = median(encrypt_ms);
  }

  void run_graph() {
    const auto setup = Clock::now();
    const Executable exe = make_executable();
    CaptureOptions capture_options;
    capture_options.warmup = spec_.execution.warmup;
    GraphProgram graph = GraphProgram::capture(
        engine_->backend(), *context_, [&exe](const ValueTree& in) { return exe.run(in); }, ValueTree(encrypt_inputs()),
        capture_options);
    report_.setup_ms = ms_since(setup);
    const CaptureStats& stats = graph.stats();
    report_.capture_ms = stats.capture_seconds * 1000.0;
    report_.first_replay_ms = stats.first_replay_seconds * 1000.0;
    report_.native_graph = stats.backend == "cuda";
    std::vector<double> encrypt_ms;
    const int reps = spec_.execution.repetitions;
    for (int rep = 0; rep < reps; ++rep) {
      const auto enc = Clock::now();
      const ValueTree::Map inputs = encrypt_inputs();  // new inputs for every replay
      encrypt_ms.push_back(ms_since(enc));
      const auto start = Clock::now();
      const ValueTree out = graph.replay(ValueTree(inputs));  // synchronized; borrowed until the next replay
      report_.total_ms.push_back(ms_since(start));
      collect_outputs([&](const std::string& name) { return download(inputs, out, name); });
      progress("run", static_cast<std::size_t>(rep + 1), static_cast<std::size_t>(reps));
    }
    graph.close();
    report_.encrypt_ms = median(encrypt_ms);
  }

  // ---- data-parallel: the repetitions dealt over several devices ----

  // Every input is encrypted here first, in the order one device encrypts
  // them, so that each repetition's ciphertexts (and outputs) are the same
  // whatever the number of devices. Rank 0 holds the keys made (or read)
  // for engine_ and broadcasts them once; each rank links, captures (graph)
  // or warms up, then runs its repetitions.
  void run_data_parallel(const std::vector<std::shared_ptr<Backend>>& backends) {
    const bool graph = spec_.execution.mode == ExecutionMode::graph;
    const int reps = spec_.execution.repetitions;
    const int untimed = graph ? 1 : spec_.execution.warmup;  // graph: the capture's inputs
    const auto ranks = static_cast<int>(backends.size());
    std::vector<std::map<std::string, HostValue>> sets;
    const auto encrypt_start = Clock::now();
    for (int i = 0; i < untimed + reps; ++i) sets.push_back(host_inputs());
    report_.encrypt_ms = ms_since(encrypt_start) / static_cast<double>(sets.size());

    DataParallelReport& dp = *report_.data_parallel;
    dp.repetitions.assign(backends.size(), 0);
    std::vector<std::map<std::string, HostValue>> results(static_cast<std::size_t>(reps));
    report_.total_ms.assign(static_cast<std::size_t>(reps), 0.0);
    std::mutex progress_mutex;
    int done = 0;
    Clock::time_point timed_start;
    std::vector<Clock::time_point> ends(backends.size());
    const auto setup_start = Clock::now();
    const std::vector<TransferStats> stats = DeviceGroup(ranks).run([&](Communicator& comm) {
      const auto r = static_cast<std::size_t>(comm.rank());
      const std::unique_ptr<Engine> own = r == 0 ? nullptr : std::make_unique<Engine>(context_, backends[r]);
      const Engine& engine = r == 0 ? *engine_ : *own;
      comm.check_agreement("the program", prepared_->program().print());
      const bool device_collectives = comm.connect(engine);
      if (r == 0) {
        dp.transport = device_collectives ? "device collectives" : "host staging (" + comm.not_connected() + ")";
      }
      const auto keys_start = Clock::now();
      std::optional<EvaluationKeys> received;
      const KeyRequirements needed = prepared_->required_keys();
      if (r == 0) {
        EvaluationKeys::broadcast(needed, comm, engine, &*keys_);
      } else {
        received.emplace(EvaluationKeys::broadcast(needed, comm, engine, nullptr));
      }
      engine.backend().synchronize();
      comm.barrier();
      if (r == 0) dp.key_broadcast_ms = ms_since(keys_start);

      Materials materials = (r == 0 ? *keys_ : *received).materials();
      for (const auto& [name, values] : c_.builder.constant_values()) materials.constants[name] = values;
      const Executable exe = link(*prepared_, engine, materials);
      std::optional<GraphProgram> captured;
      if (graph) {
        CaptureOptions capture_options;
        capture_options.warmup = spec_.execution.warmup;
        captured.emplace(GraphProgram::capture(
            engine.backend(), *context_, [&exe](const ValueTree& in) { return exe.run(in); },
            ValueTree(upload_inputs(engine, sets[0])), capture_options));
      } else {
        for (int w = 0; w < untimed; ++w) exe.run(ValueTree(upload_inputs(engine, sets[static_cast<std::size_t>(w)])));
      }
      engine.backend().synchronize();
      comm.barrier();
      if (r == 0) {
        report_.setup_ms = ms_since(setup_start);
        timed_start = Clock::now();
      }
      for (int rep = comm.rank(); rep < reps; rep += ranks) {
        const auto& in = sets[static_cast<std::size_t>(untimed + rep)];
        const ValueTree inputs(upload_inputs(engine, in));
        const auto start = Clock::now();
        const ValueTree out = captured ? captured->replay(inputs) : exe.run(inputs);
        engine.backend().synchronize();
        report_.total_ms[static_cast<std::size_t>(rep)] = ms_since(start);
        auto& result = results[static_cast<std::size_t>(rep)];
        for (const OutputSpec& o : spec_.outputs) {
          const auto input = in.find(o.value);
          if (!result.count(o.value)) {
            result.emplace(o.value, input != in.end() ? input->second : engine.download(out.at(o.value).ciphertext()));
          }
        }
        ++dp.repetitions[r];
        std::lock_guard lock(progress_mutex);
        progress("run", static_cast<std::size_t>(++done), static_cast<std::size_t>(reps));
      }
      ends[r] = Clock::now();  // no barrier here: a rank with longer runs must not time the others out
      if (captured) captured->close();
    });
    dp.wall_ms =
        std::chrono::duration<double, std::milli>(*std::max_element(ends.begin(), ends.end()) - timed_start).count();
    for (const TransferStats& t : stats) dp.bytes_moved += t.bytes_received;
    dp.repetitions_per_second = dp.wall_ms > 0 ? 1000.0 * reps / dp.wall_ms : 0;
    for (const auto& result : results) {
      collect_outputs([&](const std::string& name) { return result.at(name); });
    }
  }

  // ---- outputs ----

  // Decrypts every output of one repetition; keeps the worst error per output.
  template <class Download>
  void collect_outputs(Download download) {
    if (outputs_.empty()) {
      for (const OutputSpec& o : spec_.outputs) {
        OutputReport r;
        r.name = o.name;
        r.value = o.value;
        const NamedValue& nv = c_.named.at(o.value);
        const ValueState& s = c_.builder.state(nv.ref);
        r.level = s.level;
        r.scale = s.scale;
        r.count = o.count.value_or(std::max<std::size_t>(nv.length, 1));
        r.stride = o.stride;
        r.bound = o.max_error;
        r.error.max = -1;
        outputs_.push_back(r);
      }
      decrypted_.resize(spec_.outputs.size());
    }
    const auto start = Clock::now();
    std::vector<HostValue> values;
    for (std::size_t k = 0; k < spec_.outputs.size(); ++k) {
      values.push_back(download(spec_.outputs[k].value));
      outputs_[k].digests.push_back(values.back().residue_digest());
    }
    if (server()) {
      save_outputs(values);
      return;
    }
    for (std::size_t k = 0; k < spec_.outputs.size(); ++k) {
      const OutputSpec& o = spec_.outputs[k];
      const NamedValue& nv = c_.named.at(o.value);
      Slots got = decrypt(values[k]);
      const ErrorStats e = error_stats(nv.clear, got, slot_indices(outputs_[k].count, o.stride));
      if (e.max > outputs_[k].error.max) {
        outputs_[k].error = e;
        decrypted_[k] = std::move(got);
      }
    }
    decrypt_ms_.push_back(ms_since(start));
  }

  // The server side: each output named on the command line, as a ciphertext
  // file (every repetition computes the same values; the last one is kept).
  void save_outputs(const std::vector<HostValue>& values) {
    for (std::size_t k = 0; k < spec_.outputs.size(); ++k) {
      const OutputSpec& o = spec_.outputs[k];
      auto file = server()->output_ciphertexts.find(o.name);
      if (file == server()->output_ciphertexts.end()) file = server()->output_ciphertexts.find(o.value);
      if (file == server()->output_ciphertexts.end()) continue;
      save_ciphertext_file(file->second, *context_, values[k]);
      outputs_[k].file = file->second;
    }
  }

  void finish_outputs() {
    report_.total_median_ms = median(report_.total_ms);
    report_.decrypt_ms = median(decrypt_ms_);
    if (server()) {
      for (OutputReport& r : outputs_) {
        r.decrypted = false;
        r.error = {};
      }
      report_.outputs = std::move(outputs_);
      return;
    }
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      OutputReport& r = outputs_[k];
      const OutputSpec& o = spec_.outputs[k];
      const NamedValue& nv = c_.named.at(o.value);
      const auto slots = slot_indices(r.count, r.stride);
      for (std::size_t i = 0; i < std::min(slots.size(), spec_.report.include_values); ++i) {
        r.values.push_back(decrypted_[k][slots[i]].real());
        r.expected.push_back(nv.clear[slots[i]].real());
      }
      if (r.bound && !(r.error.max <= *r.bound)) {
        r.within_bound = false;
        report_.ok = false;
        char line[256];
        std::snprintf(line, sizeof line, "output '%s': max error %.3e exceeds its bound %.3e", r.name.c_str(),
                      r.error.max, *r.bound);
        report_.failures.emplace_back(line);
      }
      if (!o.file.empty() && options_.write_files) {
        std::filesystem::path path(o.file);
        if (path.is_relative()) path = std::filesystem::path(options_.output_dir) / path;
        if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
        write_values(path.string(), o.format, r, decrypted_[k], nv.clear, slots);
        r.file = path.string();
      }
    }
    report_.outputs = std::move(outputs_);
  }

  static void write_values(const std::string& path, const std::string& format, const OutputReport& r, const Slots& got,
                           const Slots& expected, const std::vector<std::size_t>& slots) {
    std::ofstream out(path);
    if (!out) throw Error("cannot write output file '" + path + "'");
    out.precision(17);
    if (format == "csv") {
      out << "slot,value,expected\n";
      for (std::size_t j : slots) out << j << "," << got[j].real() << "," << expected[j].real() << "\n";
    } else {
      out << "{\"output\": \"" << r.name << "\", \"value\": \"" << r.value << "\", \"stride\": " << r.stride
          << ",\n \"values\": [";
      for (std::size_t i = 0; i < slots.size(); ++i) out << (i ? ", " : "") << got[slots[i]].real();
      out << "],\n \"expected\": [";
      for (std::size_t i = 0; i < slots.size(); ++i) out << (i ? ", " : "") << expected[slots[i]].real();
      out << "]}\n";
    }
    if (!out) throw Error("cannot write output file '" + path + "'");
  }

  const PipelineSpec& spec_;
  const RunOptions& options_;
  Compiled c_;
  std::shared_ptr<const Context> context_;
  PipelineReport report_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Csprng> rng_;
  std::unique_ptr<SecretKey> sk_;
  PublicKey pk_;
  std::optional<EvaluationKeys> keys_;  // stays in place while an Executable borrows them
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Encryptor> encryptor_;
  std::unique_ptr<Decryptor> decryptor_;
  std::unique_ptr<PreparedProgram> prepared_;
  std::vector<OutputReport> outputs_;
  std::vector<Slots> decrypted_;
  std::vector<double> decrypt_ms_;
  std::map<std::string, HostValue> loaded_inputs_;  // the server side's input ciphertexts
};

}  // namespace

PipelineReport run_pipeline(const PipelineSpec& spec, const RunOptions& options) {
  Runner runner(spec, options, compile_pipeline(spec));
  return runner.run();
}

}  // namespace fhelium::runtime
