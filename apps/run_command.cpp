#include "run_command.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "backend_choice.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/pipeline.hpp"
#include "progress.hpp"

namespace fhelium::apps {
namespace {

using namespace runtime;

std::string megabytes(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return b;
}

void print_plan(std::FILE* out, const PipelineSpec& spec, const PipelinePlan& plan) {
  const Context& ctx = *plan.context;
  std::fprintf(out, "pipeline %s (%s): %zu steps, %zu operations, depth %d of %d levels\n", spec.name.c_str(),
               spec.file.c_str(), spec.steps.size(), plan.operations, plan.depth, ctx.max_level());
  std::fprintf(out, "keys: relinearization %s, conjugation %s, %zu rotation steps\n",
               plan.keys.relinearization ? "yes" : "no", plan.keys.conjugation ? "yes" : "no",
               plan.keys.rotation_steps.size());
  for (const PlannedStep& s : plan.steps) {
    std::fprintf(out, "  %-16s %-28s level %2d  scale 2^%-9.4f %-11s %2d ops\n", s.name.c_str(), s.op.c_str(), s.level,
                 std::log2(s.scale), to_string(s.domain).c_str(), static_cast<int>(s.operations));
  }
}

void print_summary(std::FILE* out, const PipelineReport& r, bool server) {
  const auto& p = r.parameters;
  std::fprintf(out, "pipeline %s (%s)\n", r.name.c_str(), r.file.c_str());
  std::fprintf(
      out, "  backend %s%s%s%s, %s (N = %llu, %d levels, log2(QP) = %.1f, budget %s), mode %s, %d repetition%s\n",
      r.backend.c_str(), r.backend_devices.empty() ? "" : " (",
      r.backend_devices.empty() ? "" : r.backend_devices.front().c_str(), r.backend_devices.empty() ? "" : ")",
      r.preset.empty() ? "explicit parameters" : r.preset.c_str(), static_cast<unsigned long long>(p.ring_degree()),
      p.max_level(), r.log_qp, r.security_budget ? std::to_string(*r.security_budget).c_str() : "none",
      to_string(r.mode).c_str(), r.repetitions, r.repetitions == 1 ? "" : "s");
  if (!r.security_budget || r.log_qp > *r.security_budget) {
    char why[128] = "the security table has no entry for them";
    if (r.security_budget) {
      std::snprintf(why, sizeof why, "log2(QP) %.1f exceeds the budget %d", r.log_qp, *r.security_budget);
    }
    std::fprintf(out, "  these parameters are below %d-bit security (%s); allow_insecure is set\n", p.security_bits,
                 why);
  }
  std::fprintf(out, "  keys: relinearization %s, conjugation %s, %zu rotations, %s, %.0f ms\n",
               r.relinearization_key ? "yes" : "no", r.conjugation_key ? "yes" : "no", r.rotation_steps.size(),
               megabytes(r.key_bytes).c_str(), r.keygen_ms);
  std::fprintf(out, "  steps:\n");
  for (const StepReport& s : r.steps) {
    std::fprintf(out, "    %-16s %-28s level %2d  scale 2^%-8.3f %s", s.state.name.c_str(), s.state.op.c_str(),
                 s.state.level, std::log2(s.state.scale), to_string(s.state.domain).c_str());
    if (s.median_ms) std::fprintf(out, " %10.3f ms", *s.median_ms);
    if (s.error) std::fprintf(out, "  max error %.2e (%.1f bits)", s.error->max, s.error->bits);
    std::fprintf(out, "\n");
  }
  if (server) {
    std::fprintf(out, "  outputs (ciphertexts: this side holds no secret key):\n");
    for (const OutputReport& o : r.outputs) {
      if (!o.file.empty()) std::fprintf(out, "    %-16s level %2d  -> %s\n", o.name.c_str(), o.level, o.file.c_str());
    }
  }
  std::fprintf(out, server ? "" : "  outputs (error against the same calculation in double precision):\n");
  for (const OutputReport& o : r.outputs) {
    if (server) break;
    std::fprintf(out, "    %-16s %5zu slots  max %.2e  mean %.2e  rms %.2e  %.1f bits", o.name.c_str(), o.count,
                 o.error.max, o.error.mean, o.error.rms, o.error.bits);
    if (o.bound) std::fprintf(out, "  bound %.3g %s", *o.bound, o.within_bound ? "ok" : "EXCEEDED");
    if (!o.file.empty()) std::fprintf(out, "  -> %s", o.file.c_str());
    std::fprintf(out, "\n");
  }
  std::fprintf(
      out,
      "  time: %.3f ms median per run over %zu run%s; keys %.0f ms, encrypt %.1f ms, decrypt %.1f ms, setup %.1f ms",
      r.total_median_ms, r.total_ms.size(), r.total_ms.size() == 1 ? "" : "s", r.keygen_ms, r.encrypt_ms, r.decrypt_ms,
      r.setup_ms);
  if (r.capture_ms) std::fprintf(out, ", capture %.1f ms", *r.capture_ms);
  if (r.data_parallel) {
    const DataParallelReport& d = *r.data_parallel;
    std::fprintf(out, "\n  data-parallel on devices");
    for (std::size_t i = 0; i < d.devices.size(); ++i) {
      std::fprintf(out, "%s%d (%d runs)", i ? ", " : " ", d.devices[i], d.repetitions[i]);
    }
    std::fprintf(out, ": %.1f runs/s, %.1f ms for all; keys broadcast in %.0f ms (%s moved, %s)",
                 d.repetitions_per_second, d.wall_ms, d.key_broadcast_ms, megabytes(d.bytes_moved).c_str(),
                 d.transport.c_str());
  }
  std::fprintf(out, "\n  peak memory: backend %s, process %s; wall %.2f s\n",
               r.backend_peak_bytes ? megabytes(r.backend_peak_bytes).c_str() : "not reported",
               megabytes(r.process_peak_bytes).c_str(), r.wall_seconds);
}

// NAME=FILE arguments of --input and --output.
std::map<std::string, std::string> name_to_file(const std::vector<std::string>& args, const char* flag) {
  std::map<std::string, std::string> out;
  for (const std::string& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      throw InvalidArgumentError(std::string(flag) + " '" + a + "': expected NAME=FILE");
    }
    if (!out.emplace(a.substr(0, eq), a.substr(eq + 1)).second) {
      throw InvalidArgumentError(std::string(flag) + " names '" + a.substr(0, eq) + "' twice");
    }
  }
  return out;
}

ServerSide server_side(const RunCommandOptions& options) {
  ServerSide server;
  server.keys_dir = options.keys_dir;
  server.input_ciphertexts = name_to_file(options.inputs, "--input");
  server.output_ciphertexts = name_to_file(options.outputs, "--output");
  if (server.output_ciphertexts.empty()) {
    throw InvalidArgumentError("--keys: the server side needs at least one --output NAME=FILE (a ciphertext file)");
  }
  return server;
}

}  // namespace

int run_pipeline_command(const RunCommandOptions& options) {
  PipelineSpec spec = load_pipeline(options.pipeline, options.sets);
  if (!options.backend.empty()) spec.backend.name = options.backend;
  if (options.check_only) {
    print_plan(stdout, spec, plan_pipeline(spec));
    return 0;
  }
  // The report: --output, else the file's outputs.report.file, else NAME.report.json.
  std::string report_path = options.output;
  if (report_path.empty()) report_path = spec.report.file.empty() ? spec.name + ".report.json" : spec.report.file;
  const bool report_to_stdout = report_path == "-";
  std::FILE* human = report_to_stdout ? stderr : stdout;

  ProgressPrinter printer(!options.quiet);
  std::vector<std::string> devices;
  std::string note;
  RunOptions run;
  run.backend_factory = [&](const BackendSpec& b) {
    ChosenBackend chosen = choose_backend(b.name, b.device, b.search_path);
    devices = chosen.devices;
    note = chosen.note;
    return chosen.backend;
  };
  run.progress = [&printer](const ProgressEvent& e) { printer(e); };
  run.devices = options.devices;
  if (const NamedDevice named = split_device(spec.backend.name); named.device) {
    if (!options.devices.empty()) {
      throw InvalidArgumentError("backend '" + spec.backend.name + "' names its device and --devices names " +
                                 std::to_string(options.devices.size()) + ": give the devices one way");
    }
    spec.backend.name = named.name;  // "cuda:1" runs, and is reported, on device 1
    spec.backend.device = *named.device;
  }
  if (!options.keys_dir.empty()) {
    run.server = server_side(options);
  } else if (!options.inputs.empty() || !options.outputs.empty()) {
    throw InvalidArgumentError("--input NAME=FILE and --output NAME=FILE are the server side's: they need --keys DIR");
  }
  const std::filesystem::path report_file(report_path);
  run.output_dir = report_to_stdout || !report_file.has_parent_path() ? "." : report_file.parent_path().string();
  PipelineReport report = run_pipeline(spec, run);
  printer.finish();
  report.backend_devices = devices;
  if (!note.empty()) std::fprintf(human, "%s\n", note.c_str());
  print_summary(human, report, run.server.has_value());
  const std::string json = report.to_json();
  if (report_to_stdout) {
    std::cout << json;
  } else {
    if (report_file.has_parent_path()) std::filesystem::create_directories(report_file.parent_path());
    std::ofstream out(report_path);
    out << json;
    if (!out) throw Error("cannot write the report to '" + report_path + "'");
    std::fprintf(human, "  report: %s\n", report_path.c_str());
  }
  for (const auto& f : report.failures) std::fprintf(stderr, "fhelium: %s\n", f.c_str());
  return report.ok ? 0 : 1;
}

}  // namespace fhelium::apps
