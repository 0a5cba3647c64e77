// The `fhelium` command-line tool: demo, params, backends, run, bench, and the
// client's keygen, encrypt and decrypt.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "bench_command.hpp"
#include "client_commands.hpp"
#include "demo.hpp"
#include "fhelium/circuits/bootstrap.hpp"
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
  std::printf("%-38s %7s %6s %6s %3s %3s %6s %9s %6s %7s\n", "preset", "N", "slots", "levels", "Q", "P", "digits",
              "log2(QP)", "budget", "margin");
  for (const auto& n : preset_names()) {
    const auto ctx = Context::create(preset(n));
    const auto budget = max_log_qp(ctx->params().secret, ctx->params().security_bits, ctx->ring_degree());
    std::printf("%-38s %7llu %6llu %6d %3zu %3zu %6d %9.1f %6d %7.1f\n", n.c_str(),
                static_cast<unsigned long long>(ctx->ring_degree()),
                static_cast<unsigned long long>(ctx->ring_degree() / 2), ctx->max_level(), ctx->q().size(),
                ctx->p().size(), ctx->key_digits(), ctx->log_qp(), budget.value_or(0),
                budget.value_or(0) - ctx->log_qp());
  }
  return 0;
}

// The bootstrap's level budget and keys, for a bootstrapping preset.
void describe_bootstrap(const std::string& name, const std::shared_ptr<const Context>& ctx, double key_bytes) {
  if (name.find("_bootstrap") == std::string::npos) return;
  const circuits::BootstrapConfig config;
  const runtime::KeyRequirements keys = circuits::Bootstrapper::required_keys(ctx, config);
  const std::size_t galois = keys.galois_elements(*ctx).size();
  std::printf(
      "  bootstrapping (circuits::Bootstrapper, default configuration): %d levels from the top level\n"
      "    CoeffToSlot %d, EvalMod %d, SlotToCoeff %d; %d levels left at scale 2^%.0f\n",
      config.depth(), config.coeff_to_slot_levels, config.eval_mod_depth(), config.slot_to_coeff_levels,
      ctx->max_level() - config.depth(), std::log2(ctx->params().scale));
  std::printf(
      "    keys: relinearization, %zu Galois (%zu rotations%s) and the sparse-secret encapsulation's two:\n"
      "    about %s\n",
      galois, keys.rotation_steps.size(), keys.conjugation ? " and conjugation" : "",
      size_text(key_bytes * static_cast<double>(1 + galois + 1)).c_str());
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
  if (p.word_size == WordSize::bits32) {
    std::printf(
        "  levels (the rational chain, then wide levels of two primes): primes held, the divisor of\n"
        "  the rescale to the level below, the nominal scale (the rational chain's)\n");
    const int rational_top = ctx->max_level() - p.wide_levels;
    for (int level = ctx->max_level(); level >= 0; --level) {
      const LevelBasis basis = ctx->level_basis(level);
      std::printf("    level %-2d q_%d..q_%-2d", level, basis.first, basis.first + basis.count - 1);
      if (level > 0) std::printf("  divides by 2^%.3f", std::log2(ctx->rescale_divisor(level)));
      if (level > rational_top) {
        std::printf("  wide\n");
      } else {
        std::printf("  scale 2^%.3f\n", std::log2(ctx->nominal_scale(level)));
      }
    }
  }
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
  const double word = static_cast<double>(stored_word_bytes(p.word_size));
  const double top_ct = 2.0 * ctx->level_basis(ctx->max_level()).count * static_cast<double>(n) * word;
  const double bottom_ct = 2.0 * ctx->level_basis(0).count * static_cast<double>(n) * word;
  const double key = static_cast<double>(ctx->key_words()) * word;
  const int log_slots = static_cast<int>(std::log2(static_cast<double>(n / 2)));
  std::printf("  ciphertext: %s at the top level, %s at level 0 (2 x limbs x N words)\n", size_text(top_ct).c_str(),
              size_text(bottom_ct).c_str());
  std::printf(
      "  evaluation keys: relinearization %s; each rotation or conjugation key %s (digits x 2 x %d limbs x N words);\n"
      "    relinearization + %d power-of-two rotations (both directions) %s\n",
      size_text(key).c_str(), size_text(key).c_str(), ctx->key_limbs(), 2 * log_slots,
      size_text(key * (1 + 2 * log_slots)).c_str());
  describe_bootstrap(name, ctx, key);
  return 0;
}

int print_backends() {
  const auto found = list_backends();
  if (found.empty()) {
    std::printf("no backend plugin (libfhelium-backend-NAME.so) found; searched:\n");
    for (const auto& folder : backend_search_path({})) std::printf("  %s\n", folder.c_str());
    std::printf("set FHELIUM_BACKEND_PATH to add folders\n");
    return 1;
  }
  for (const auto& info : found) {
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
  std::vector<std::string> run_outputs;  // the report file, and with --keys NAME=FILE ciphertexts
  run_cmd
      ->add_option("-o,--output", run_outputs,
                   "Report file (default: outputs.report.file, else NAME.report.json; '-' for stdout); with --keys, "
                   "NAME=FILE writes output NAME as a ciphertext file (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd->add_option("--keys", run.keys_dir,
                      "The server side: evaluation keys from this folder (fhelium keygen), no secret key; inputs from "
                      "--input, outputs to --output NAME=FILE");
  run_cmd->add_option("--input", run.inputs, "With --keys: NAME=FILE, an encrypted input as a ciphertext file")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd->add_option("--set", run.sets, "Override a key: KEY=VALUE, e.g. execution.mode=graph (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd
      ->add_option("--devices", run.devices,
                   "Device indices, e.g. 0,1: the repetitions dealt over one backend per device (modes program "
                   "and graph; docs/multi-device.md)")
      ->delimiter(',');
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
    return list +
           ".\nencode, encrypt, decrypt, upload and download are timed by the host clock, the others by the "
           "backend's timing events (CUDA events on a GPU). The cpu backend's threads: OMP_NUM_THREADS.";
  }());

  fhelium::apps::KeygenOptions keygen;
  auto* keygen_cmd = app.add_subcommand(
      "keygen", "Make a secret key (mode 0600), a public key and evaluation keys in a folder, with their sizes");
  keygen_cmd->add_option("--params", keygen.params, "A preset name or a parameters file");
  keygen_cmd->add_option("--for", keygen.pipeline, "Exactly the evaluation keys this pipeline needs");
  keygen_cmd->add_option("--rotations", keygen.rotations, "Without --for: rotation steps (comma-separated)")
      ->delimiter(',');
  keygen_cmd->add_flag("--conjugation", keygen.conjugation, "Without --for: a conjugation key");
  keygen_cmd->add_flag("--compress", keygen.compress, "zstd-compress the keys");
  keygen_cmd->add_option("--out", keygen.out, "The folder written")->required();

  fhelium::apps::EncryptOptions encrypt;
  auto* encrypt_cmd = app.add_subcommand("encrypt", "Encrypt numbers (.csv or .json) with a public key");
  encrypt_cmd->add_option("--public-key", encrypt.public_key, "The public key file")->required();
  encrypt_cmd->add_option("--params", encrypt.params, "Parameters (default: params.fhe beside the public key)");
  encrypt_cmd->add_option("--in", encrypt.in, "The values: a CSV file or a JSON array")->required();
  encrypt_cmd->add_option("--out", encrypt.out, "The ciphertext file written")->required();
  encrypt_cmd->add_option("--level", encrypt.level, "Encryption level (default: the top)");
  encrypt_cmd->add_flag("--compress", encrypt.compress, "zstd-compress the ciphertext");

  fhelium::apps::DecryptOptions decrypt;
  auto* decrypt_cmd = app.add_subcommand("decrypt", "Decrypt a ciphertext file with the secret key into CSV");
  decrypt_cmd->add_option("--secret-key", decrypt.secret_key, "The secret key file")->required();
  decrypt_cmd->add_option("--params", decrypt.params, "Parameters (default: params.fhe beside the secret key)");
  decrypt_cmd->add_option("--in", decrypt.in, "The ciphertext file")->required();
  decrypt_cmd->add_option("--out", decrypt.out, "The CSV written (slot,value)")->required();
  decrypt_cmd->add_option("--count", decrypt.count, "Slots written (default: all)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo_cmd) return fhelium::apps::run_demo(demo);
    if (*params_cmd) return params_name.empty() ? list_presets() : describe_preset(params_name);
    if (*backends_cmd) return print_backends();
    if (*run_cmd) {
      for (const std::string& v : run_outputs) {
        if (v.find('=') != std::string::npos) {
          run.outputs.push_back(v);
        } else if (run.output.empty()) {
          run.output = v;
        } else {
          throw fhelium::InvalidArgumentError("--output names two report files: '" + run.output + "' and '" + v + "'");
        }
      }
      return fhelium::apps::run_pipeline_command(run);
    }
    if (*bench_cmd) return fhelium::apps::run_bench_command(bench);
    if (*keygen_cmd) return fhelium::apps::run_keygen(keygen);
    if (*encrypt_cmd) return fhelium::apps::run_encrypt(encrypt);
    if (*decrypt_cmd) return fhelium::apps::run_decrypt(decrypt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fhelium: %s\n", one_line(e.what()).c_str());
    return 2;
  }
  return 0;
}
