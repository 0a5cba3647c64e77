// fhelium-conformance: runs the conformance suite against a backend plugin
// and compares it bit for bit with the in-process CPU reference.
//
//   fhelium-conformance --backend cuda [--log-n 12 13 14 | --params SET,...] [--levels LEVEL,...]
//                       [--transform-log-n 10,17 [--transform-bits 44,45] [--transforms-only]]
//                       [--trials 2] [--seed 1] [--filter SUBSTRING] [--verbose] [--search-path DIR]...
//
// Exit status: 0 when every case passed, 1 when some failed, 2 when the
// options name no parameter set or level, or the backend could not be
// loaded (or the suite could not run).
#include <CLI/CLI.hpp>
#include <chrono>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "fhelium/plugins/loader.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Runs every operation on a backend and compares it bit for bit with the CPU reference"};
  std::string backend_name;
  fhelium::conformance::ConformanceOptions options;
  fhelium::LoadOptions load;
  app.add_option("--backend", backend_name, "Backend name (\"cpu\", \"cuda\", ...) or path to a plugin file")
      ->required();
  app.footer(
      "Examples:\n"
      "  fhelium-conformance --backend cuda --params N13_L3_K2_B44,slots8192_scale40_levels7 --levels top,middle,0\n"
      "  fhelium-conformance --backend cuda --transforms-only --transform-log-n 12,14,16 --transform-bits 30,43,44,45");
  auto* log_n = app.add_option("--log-n", options.log_n,
                               "Ring sizes (log2 N) of the three default parameter sets: a 55-bit q_0, 3, 4 or 6 "
                               "levels of 40 bits, 1, 2 or 3 special primes of 55 bits")
                    ->expected(1, 16)
                    ->delimiter(',')
                    ->check(CLI::Range(10, 17))
                    ->capture_default_str();
  auto* params = app.add_option("--params", options.params,
                                "Parameter sets to run instead of the default ones: presets "
                                "(slots8192_scale40_levels7, ...: `fhelium params` lists them) or shapes "
                                "N<log2 N>_L<levels>_K<special primes>, e.g. N13_L6_K4 (55-bit q_0, levels of 40 "
                                "bits, special primes of 55 bits), N13_L3_K2_B44 (every q and p prime of 44 bits), or "
                                "N13_W32 (a small chain of the 32-bit word family)")
                     ->delimiter(',')
                     ->excludes(log_n);
  std::vector<std::string> levels;
  const CLI::Validator level_check(
      [](std::string& text) {
        try {
          fhelium::conformance::parse_level(text);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      "LEVEL");
  auto* levels_option = app.add_option("--levels", levels,
                                       "Levels tested in each parameter set: top, middle (top / 2), lowest (0) or "
                                       "numbers [default: top, middle and 1 (0 in the first default set)]")
                            ->delimiter(',')
                            ->check(level_check);
  auto* transform_log_n = app.add_option("--transform-log-n", options.transform_log_n,
                                         "Also run the transform family (to_ntt and to_coefficient of random "
                                         "residues, 3 and 1 limbs) at these ring sizes, as log2 N")
                              ->delimiter(',')
                              ->check(CLI::Range(10, 17));
  app.add_option("--transform-bits", options.transform_bits,
                 "Prime sizes of the transform family, each a run with every prime of that many bits (20..61; "
                 "0: primes of 55, 40 and 40 bits) [default: 0]")
      ->delimiter(',')
      ->check(CLI::Range(0, 61))
      ->needs(transform_log_n);
  bool transforms_only = false;
  app.add_flag("--transforms-only", transforms_only, "Run only the transform family (no Engine or direct cases)")
      ->needs(transform_log_n)
      ->excludes(log_n)
      ->excludes(params)
      ->excludes(levels_option);
  app.add_option("--trials", options.trials, "Fresh messages and encryptions per case")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Seed of keys, messages and encryption randomness")->capture_default_str();
  app.add_option("--filter", options.filter, "Run only the cases whose name contains this substring");
  app.add_option("--reference-threads", options.reference_threads,
                 "OpenMP threads of the CPU reference (0: OpenMP's default)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--verbose", options.verbose, "Print every case (and progress on stderr)");
  app.add_option("--search-path", load.search_path, "Folder searched for plugins first (repeatable)")
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  options.operations = !transforms_only;
  try {
    for (const auto& level : levels) options.levels.push_back(fhelium::conformance::parse_level(level));
    fhelium::conformance::check_options(options);
  } catch (const std::exception& e) {
    std::cerr << "fhelium-conformance: " << e.what() << "\n";
    return 2;
  }

  std::shared_ptr<fhelium::Backend> backend;
  std::string name;
  try {
    backend = fhelium::load_backend(backend_name, load);
    name = backend->name();
  } catch (const std::exception& e) {
    std::cerr << "fhelium-conformance: " << e.what() << "\n";
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<fhelium::conformance::CaseResult> results;
  try {
    results = fhelium::conformance::run_conformance(backend, options);
  } catch (const std::exception& e) {
    std::cerr << "fhelium-conformance: " << e.what() << "\n";
    return 2;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::size_t failed = 0;
  for (const auto& r : results) {
    if (!r.passed) ++failed;
    if (!r.passed || options.verbose) {
      std::cout << (r.passed ? "PASS " : "FAIL ") << r.name << ": " << r.detail << "\n";
    }
  }
  std::cout << "conformance: backend '" << name << "': " << results.size() - failed << " passed, " << failed
            << " failed, " << results.size() << " total" << std::endl;
  if (options.verbose) std::cerr << "fhelium-conformance: " << seconds << " s\n";
  return failed == 0 ? 0 : 1;
}
