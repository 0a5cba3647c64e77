// fhelium-conformance: runs the conformance suite against a backend plugin
// and compares it bit for bit with the in-process CPU reference.
//
//   fhelium-conformance --backend cuda [--log-n 12 13 14] [--trials 2] [--seed 1]
//                       [--filter SUBSTRING] [--verbose] [--search-path DIR]...
//
// Exit status: 0 when every case passed, 1 when some failed, 2 when the
// backend could not be loaded (or the suite could not run).
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
  app.add_option("--log-n", options.log_n, "Ring sizes to test, as log2 N")
      ->expected(1, 16)
      ->check(CLI::Range(10, 17))
      ->capture_default_str();
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
