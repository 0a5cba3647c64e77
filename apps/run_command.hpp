// `fhelium run PIPELINE.yaml`: runs a YAML pipeline, prints a summary and
// writes the JSON report.
#pragma once

#include <string>
#include <vector>

namespace fhelium::apps {

struct RunCommandOptions {
  std::string pipeline;           // the YAML file
  std::string backend;            // overrides the file's backend.name when set
  std::string output;             // the report file ("-": stdout); default from the file
  std::string keys_dir;           // the server side: evaluation keys from here, no secret key
  std::vector<std::string> inputs;   // the server side: NAME=FILE input ciphertexts
  std::vector<std::string> outputs;  // the server side: NAME=FILE output ciphertexts
  std::vector<std::string> sets;  // KEY=VALUE overrides
  std::vector<int> devices;       // several: data-parallel over these device indices
  bool check_only = false;        // parse and plan only: no keys, no encryption
  bool quiet = false;             // no progress output
};

// Returns the exit code: 0 success, 1 an output exceeds its bound.
// Throws on anything else (the caller prints the one-line reason).
int run_pipeline_command(const RunCommandOptions& options);

}  // namespace fhelium::apps
