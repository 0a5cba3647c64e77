// The `fhelium` command-line tool: demo, params, backends, run, bench.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "bench_command.hpp"
#include "demo.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"
#include "fhelium/params.hpp"
#include "fhelium/plugins/loader.hpp"
#include "fhelium/security.hpp"
#include "run_command.hpp"

namespace {

using namespace fhelium;

std::string size_text(double bytes) {
  char b[32];
  if (bytes >= 1e9) {
    std::snprintf(b, sizeof b, "%.2f GB", bytes / 1e9);
  } else if (bytes >= 1e6) {
    std::snprintf(b, sizeof b, "%.2f MB", bytes / 1e6);
  } else {
    std::snprintf(b, sizeof b, "%.1f kB", bytes / 1e3);
  }
  return b;
}

int list_presets() {
  std::printf("%-30s %7s %6s %6s %3s %3s %6s %9s %6s %7s\n", "preset", "N", "slots", "levels", "Q", "P", "digits",
              "log2(QP)", "budget", "margin");
  for (const auto& n : preset_names()) {
    const auto ctx = Context::create(preset(n));
    const auto budget = max_log_qp(ctx->params().secret, ctx->params().security_bits, ctx->ring_degree());
    std::printf("%-30s %7llu %6llu %6d %3zu %3zu %6d %9.1f %6d %7.1f\n", n.c_str(),
                static_cast<unsigned long long>(ctx->ring_degree()),
                static_cast<unsigned long long>(ctx->ring_degree() / 2), ctx->max_level(), ctx->q().size(),
                ctx->p().size(), ctx->key_digits(), ctx->log_qp(), budget.value_or(0),
                budget.value_or(0) - ctx->log_qp());
  }
  return 0;
}

int describe_preset(const std::string& name) {
  const auto ctx = Context::create(preset(name));
  const CkksParameters& p = ctx->params();
  const std::size_t n = ctx->ring_degree();
  const auto budget = max_log_qp(p.secret, p.security_bits, n);
  std::printf("preset %s\n", name.c_str());
  std::printf("  ring degree N = %zu, slots %zu, levels %d, scale 2^%.0f, %d-bit words\n", n, n / 2, ctx->max_level(),
              std::log2(p.scale), static_cast<int>(p.word_size));
  const auto primes = [](const char* what, const std::vector<Modulus>& list) {
    std::printf("  %s primes (%zu):\n", what, list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::printf("    %s_%-2zu %20llu  (%.2f bits)\n", what, i, static_cast<unsigned long long>(list[i].value),
                  std::log2(static_cast<double>(list[i].value)));
    }
  };
  primes("q", ctx->q());
  primes("p", ctx->p());
  std::printf("  log2(Q) = %.1f, log2(QP) = %.1f\n", ctx->log_q(), ctx->log_qp());
  if (budget) {
    std::printf("  security: %d-bit, %s secret: budget log2(QP) <= %d, margin %.1f bits (%s)\n", p.security_bits,
                to_string(p.secret).c_str(), *budget, *budget - ctx->log_qp(),
                ctx->log_qp() <= *budget ? "within the budget" : "OVER the budget");
  } else {
    std::printf("  security: the table has no entry for N = %zu at %d bits\n", n, p.security_bits);
  }
  std::printf("  key switching: %d digits of %d prime%s each (hybrid, %d special prime%s)\n", ctx->key_digits(),
              ctx->digit_size(), ctx->digit_size() == 1 ? "" : "s", ctx->special_count(),
              ctx->special_count() == 1 ? "" : "s");
  const double word = static_cast<double>(word_bytes(p.word_size));
  const double top_ct = 2.0 * (ctx->max_level() + 1) * static_cast<double>(n) * word;
  const double bottom_ct = 2.0 * static_cast<double>(n) * word;
  const double key = static_cast<double>(ctx->key_digits()) * 2.0 * ctx->key_limbs() * static_cast<double>(n) * word;
  const int log_slots = static_cast<int>(std::log2(static_cast<double>(n / 2)));
  std::printf("  ciphertext: %s at the top level, %s at level 0 (2 x limbs x N words)\n", size_text(top_ct).c_str(),
              size_text(bottom_ct).c_str());
  std::printf(
      "  evaluation keys: relinearization %s; each rotation or conjugation key %s (digits x 2 x %d limbs x N words);\n"
      "    relinearization + %d power-of-two rotations (both directions) %s\n",
      size_text(key).c_str(), size_text(key).c_str(), ctx->key_limbs(), 2 * log_slots,
      size_text(key * (1 + 2 * log_slots)).c_str());
  return 0;
}

int print_backends() {
  for (const auto& info : list_backends()) {
    if (!info.error.empty()) {
      std::printf("%-10s %s\n  error: %s\n", info.name.empty() ? "?" : info.name.c_str(), info.path.c_str(),
                  info.error.c_str());
      continue;
    }
    std::printf("%-10s version %s, ABI %d.%d, %s\n", info.name.c_str(), info.version.c_str(), info.abi_major,
                info.abi_minor, info.path.c_str());
    for (const auto& device : info.devices) std::printf("  %s\n", device.c_str());
  }
  return 0;
}

// One line: a reason never spans lines.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium: CKKS homomorphic encryption"};
  app.require_subcommand(1);

  fhelium::apps::DemoOptions demo;
  auto* demo_cmd =
      app.add_subcommand("demo", "Run a small built-in pipeline on the default backend and print its errors");
  demo_cmd->add_option("--preset", demo.preset, "Parameter preset")->capture_default_str();
  demo_cmd->add_option("--backend", demo.backend, "Backend name or plugin path (auto: cuda when available, else cpu)")
      ->capture_default_str();
  demo_cmd->add_flag("--show-pipeline", demo.show_pipeline, "Print the demo's YAML pipeline instead of running it");

  std::string params_name;
  auto* params_cmd =
      app.add_subcommand("params", "List the presets, or one preset's primes, security margin and sizes");
  params_cmd->add_option("preset", params_name, "Preset name");

  auto* backends_cmd = app.add_subcommand("backends", "List the backend plugins found, with versions and devices");

  fhelium::apps::RunCommandOptions run;
  auto* run_cmd = app.add_subcommand("run", "Run a YAML pipeline, print a summary and write a JSON report");
  run_cmd->add_option("pipeline", run.pipeline, "The pipeline file (docs/pipelines.md)")->required();
  run_cmd->add_option("--backend", run.backend, "Backend name or plugin path (overrides backend.name)");
  run_cmd->add_option("-o,--output", run.output,
                      "Report file (default: outputs.report.file, else NAME.report.json; '-' for stdout)");
  run_cmd->add_option("--set", run.sets, "Override a key: KEY=VALUE, e.g. execution.mode=graph (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd->add_flag("--check", run.check_only, "Parse and plan only (states, depth, keys): no keys, no encryption");
  run_cmd->add_flag("-q,--quiet", run.quiet, "No progress output");

  fhelium::apps::BenchOptions bench;
  auto* bench_cmd = app.add_subcommand("bench", "Time Engine operations on a backend (JSON out)");
  bench_cmd->add_option("--backend", bench.backend, "Backend name or plugin path (auto: cuda when available, else cpu)")
      ->capture_default_str();
  bench_cmd->add_option("--device", bench.device, "Device index")->capture_default_str();
  bench_cmd->add_option("--preset", bench.presets, "Presets to measure")->expected(1, -1)->capture_default_str();
  bench_cmd->add_option("--ops", bench.ops, "Operations to measure (default: all)")->expected(1, -1);
  bench_cmd->add_option("--runs", bench.runs, "Timed runs per operation")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_cmd->add_option("-o,--output", bench.output, "Write the JSON here instead of stdout");
  bench_cmd->footer("Operations: " + [] {
    std::string list;
    for (const auto& op : fhelium::apps::bench_operations()) list += (list.empty() ? "" : ", ") + op;
    return list;
  }());

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo_cmd) return fhelium::apps::run_demo(demo);
    if (*params_cmd) return params_name.empty() ? list_presets() : describe_preset(params_name);
    if (*backends_cmd) return print_backends();
    if (*run_cmd) return fhelium::apps::run_pipeline_command(run);
    if (*bench_cmd) return fhelium::apps::run_bench_command(bench);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fhelium: %s\n", one_line(e.what()).c_str());
    return 2;
  }
  return 0;
}
