// YAML pipelines: a backend, parameters, inputs, a calculation of named steps
// and what to report, read from a file (docs/pipelines.md is the schema).
//
//   PipelineSpec spec = load_pipeline("examples/pipelines/matvec.yaml");
//   PipelinePlan plan = plan_pipeline(spec);      // every check, no keys, no encryption
//   RunOptions options;
//   options.backend_factory = [](const BackendSpec& b) { return load_backend(b.name); };
//   PipelineReport report = run_pipeline(spec, options);
//   std::string json = report.to_json();
//
// Everything that can be wrong with a pipeline (YAML syntax, an unknown key or
// operation, an undefined value, a state conflict, a depth the parameters do
// not give, a missing input file, a vector longer than the slot count) is
// refused by load_pipeline or plan_pipeline, before any backend is created or
// anything encrypted, as a PipelineError naming the file, line, column and key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"
#include "fhelium/context.hpp"
#include "fhelium/error.hpp"
#include "fhelium/params.hpp"
#include "fhelium/runtime/program.hpp"
#include "fhelium/value.hpp"

namespace fhelium::runtime {

// Where a key or value sits: a file position (1-based) or a command-line override.
struct SourceMark {
  std::string file;  // the pipeline file, or "--set KEY=VALUE" for an override
  int line = 0;      // 0 when unknown (an override)
  int column = 0;
  std::string describe() const;  // "FILE:LINE:COLUMN" or the override
};

// A pipeline that cannot be read or planned. what() is
// "FILE:LINE:COLUMN: key 'steps[2].op': unknown operation 'rotat' (known: ...)".
class PipelineError : public InvalidArgumentError {
 public:
  PipelineError(SourceMark mark, std::string key, std::string reason);
  const SourceMark& mark() const { return mark_; }
  const std::string& key() const { return key_; }        // "steps[2].op"; empty for a syntax error
  const std::string& reason() const { return reason_; }  // the message without location

 private:
  SourceMark mark_;
  std::string key_;
  std::string reason_;
};

struct BackendSpec {
  std::string name = "auto";  // a backend name or plugin path; auto: cuda when it loads, else cpu
  int device = 0;
  std::vector<std::string> search_path;  // options.search_path: plugin folders searched first
};

struct ParamsSpec {
  std::string preset;         // empty when the parameters are explicit
  CkksParameters parameters;  // resolved (a preset with any explicit keys applied)
  SourceMark mark;
};

// One input: a vector, or a matrix (rows x cols, row-major). An encrypted
// matrix is packed row-major with each row padded to a power-of-two width.
struct InputSpec {
  std::string name;
  bool encrypted = true;
  std::size_t rows = 0;         // 0 for a vector
  std::size_t cols = 0;         // the vector's length, or the matrix's columns
  std::vector<double> values;   // row-major
  std::optional<int> level;     // encryption level (default: the top level)
  std::optional<double> scale;  // encoding scale (default: params scale)
  std::string source;           // "inline", "uniform [-1, 1], seed 7", "file data/x.csv"
  SourceMark mark;
  std::string key;  // "inputs.x"
  bool is_matrix() const { return rows != 0; }
};

// One named step: an Engine operation or a composite.
struct StepSpec {
  std::string name;
  std::string op;
  std::vector<std::string> args;
  double value = 0;                         // add_scalar, sub_scalar, multiply_scalar
  std::optional<double> scalar_scale;       // multiply_scalar (default: the prime the next rescale removes)
  std::int64_t integer = 0;                 // multiply_integer
  int level = 0;                            // drop_to_level
  long step = 0;                            // rotate
  std::vector<long> steps;                  // rotate_hoisted
  std::vector<std::string> result_names;    // rotate_hoisted: names of the results (default NAME_0, NAME_1, ...)
  std::optional<double> plain_scale;        // multiply_plain: plaintext encoding scale
  std::string matrix_input;                 // matvec: a plaintext matrix input ...
  std::vector<std::vector<double>> matrix;  // ... or an inline matrix
  bool matvec_bsgs = false;                 // matvec method: false diagonal (one rotation per diagonal), true bsgs
  std::vector<double> coefficients;         // polynomial: c0, c1, ... (power basis)
  std::optional<std::size_t> width;   // sum_slots, inner_product: slots summed (a power of two)
  std::string to;                     // align: the value whose level and scale to reach
  // bootstrap: the configuration's fields a pipeline may set (default: the
  // circuit's defaults; the slot count comes from the argument's period).
  struct BootstrapOptions {
    std::optional<int> coeff_to_slot_levels, slot_to_coeff_levels, double_angle, cosine_degree;
    std::optional<double> message_ratio;
    std::optional<bool> arcsine_correction, horner_giants;
  } bootstrap;
  SourceMark mark;                    // the step's map
  std::string key;                    // "steps[3]"
  std::vector<SourceMark> arg_marks;  // per argument
  SourceMark op_mark;
};

enum class ExecutionMode { eager, program, graph };
std::string to_string(ExecutionMode mode);

struct ExecutionSpec {
  ExecutionMode mode = ExecutionMode::eager;
  int repetitions = 1;
  int warmup = 0;
  std::optional<std::uint64_t> seed;  // keys and encryption randomness (reproducible runs; not for production)
  SourceMark mark;
};

struct OutputSpec {
  std::string name;                  // the output's name in the report (default: the value)
  std::string value;                 // the step or input decrypted
  std::string file;                  // empty: only in the report
  std::string format;                // "json" | "csv" (default from the file's extension)
  std::optional<std::size_t> count;  // slots written (default: the value's length)
  std::size_t stride = 1;            // slot distance between written values
  std::optional<double> max_error;   // a bound the run is checked against
  SourceMark mark;
  std::string key;
};

struct ReportSpec {
  std::string file;                // empty: the command line decides (default NAME.report.json)
  bool step_errors = true;         // eager mode: decrypt every step and report its error
  std::size_t include_values = 8;  // decrypted and expected values per output copied into the report
};

struct PipelineSpec {
  std::string name;
  std::string description;
  std::string file;      // the pipeline file ("<string>" when parsed from text)
  std::string base_dir;  // relative input files are resolved here
  BackendSpec backend;
  ParamsSpec params;
  std::vector<InputSpec> inputs;
  std::vector<StepSpec> steps;
  ExecutionSpec execution;
  std::vector<OutputSpec> outputs;  // default: the last step
  ReportSpec report;
};

// Reads and validates a pipeline file. `overrides` are "KEY=VALUE" with KEY a
// dotted path ("execution.mode", "steps[2].step", "inputs.x.random.seed");
// VALUE is parsed as YAML. Input files and random inputs are loaded here.
PipelineSpec load_pipeline(const std::string& path, const std::vector<std::string>& overrides = {});
PipelineSpec parse_pipeline(const std::string& yaml_text, const std::string& file_name = "<string>",
                            const std::vector<std::string>& overrides = {}, const std::string& base_dir = ".");

// The state of one step's result.
struct PlannedStep {
  std::string name;
  std::string op;
  int level = 0;
  double scale = 0;
  Domain domain = Domain::ntt;
  int components = 2;
  bool encrypted = true;
  std::size_t operations = 0;  // Engine operations the step expands to
  std::size_t length = 0;      // logical slots (the value's vector length)
};

// What plan_pipeline checked and derived: the context, each step's state, the keys.
struct PipelinePlan {
  std::shared_ptr<const Context> context;
  std::vector<PlannedStep> steps;
  KeyRequirements keys;  // sparse_encapsulation: a bootstrap under a dense secret
  int depth = 0;  // levels consumed (top level minus the lowest level reached)
  std::size_t operations = 0;
};

// Builds the context and compiles every step, checking states, depth and
// keys. Creates no backend, no key and no ciphertext. Throws PipelineError.
PipelinePlan plan_pipeline(const PipelineSpec& spec);

struct ErrorStats {
  double max = 0;
  double mean = 0;
  double rms = 0;
  double bits = 0;          // -log2(max); 53 when exact
  double max_expected = 0;  // largest |expected| over the compared slots
  std::size_t count = 0;    // slots compared
};

struct StepReport {
  PlannedStep state;
  std::optional<double> median_ms;  // eager (synchronized) and program (backend timing events) modes
  std::optional<ErrorStats> error;  // eager mode with report.step_errors
};

struct OutputReport {
  std::string name;
  std::string value;
  int level = 0;
  double scale = 0;
  std::size_t count = 0;
  std::size_t stride = 1;
  ErrorStats error;       // the worst repetition
  bool decrypted = true;  // false on the server side: no secret key, no error
  std::optional<double> bound;
  bool within_bound = true;
  std::string file;            // written to, if any
  std::vector<double> values;  // first report.include_values decrypted values (real parts)
  std::vector<double> expected;
  // HostValue::residue_digest of each timed repetition's output, in order:
  // equal between runs on the same inputs and keys (devices, backends).
  std::vector<std::uint64_t> digests;
};

// A data-parallel run (RunOptions.devices): the timed repetitions are
// dealt round-robin over the devices, one rank each, with the keys made
// once and broadcast.
struct DataParallelReport {
  std::vector<int> devices;
  std::vector<int> repetitions;    // per device
  double wall_ms = 0;              // every timed repetition, inputs uploaded and outputs downloaded
  double repetitions_per_second = 0;
  double key_broadcast_ms = 0;
  std::size_t bytes_moved = 0;     // by the collectives, all ranks
  std::string transport;           // "device collectives" (NCCL on cuda) or "host staging"
};

struct PipelineReport {
  std::string name;
  std::string file;
  std::string backend;
  std::vector<std::string> backend_devices;
  int device = 0;
  std::string preset;
  CkksParameters parameters;
  double log_qp = 0;
  std::optional<int> security_budget;
  ExecutionMode mode = ExecutionMode::eager;
  int repetitions = 1;
  int warmup = 0;
  int depth = 0;
  std::size_t operations = 0;
  bool relinearization_key = false;
  bool conjugation_key = false;
  std::set<long> rotation_steps;
  std::size_t key_bytes = 0;
  std::vector<StepReport> steps;
  std::vector<OutputReport> outputs;
  double total_median_ms = 0;    // the calculation, median over repetitions
  std::vector<double> total_ms;  // each repetition
  double keygen_ms = 0;
  double encrypt_ms = 0;  // per repetition's inputs (encode, encrypt, upload), median
  double decrypt_ms = 0;
  double setup_ms = 0;               // link, constants, capture
  std::optional<double> capture_ms;  // graph mode
  std::optional<double> first_replay_ms;
  std::optional<bool> native_graph;
  std::size_t backend_peak_bytes = 0;
  std::size_t process_peak_bytes = 0;
  double wall_seconds = 0;
  std::optional<DataParallelReport> data_parallel;
  bool ok = true;                     // every output within its bound
  std::vector<std::string> failures;  // one line each

  std::string to_json() const;  // the report document (Boost.JSON, pretty-printed)
};

struct ProgressEvent {
  std::string phase;  // "keys", "encrypt", "warmup", "run", "decrypt"
  std::size_t done = 0;
  std::size_t total = 0;
  std::string detail;  // e.g. the step just finished
};

using BackendFactory = std::function<std::shared_ptr<Backend>(const BackendSpec&)>;

// The server side of a client/server run: no secret key exists. Evaluation
// keys come from `keys_dir` (fhelium/runtime/key_folder.hpp), every encrypted
// input from its ciphertext file, and outputs are written as ciphertext files
// instead of being decrypted and compared (their reports carry no errors).
struct ServerSide {
  std::string keys_dir;
  std::map<std::string, std::string> input_ciphertexts;   // input name -> file
  std::map<std::string, std::string> output_ciphertexts;  // output name -> file
};

struct RunOptions {
  BackendFactory backend_factory;                      // required
  // Several devices: one backend each (the spec's backend with this device
  // index), the repetitions dealt over them (modes program and graph).
  // Empty: the spec's device alone.
  std::vector<int> devices;
  std::function<void(const ProgressEvent&)> progress;  // optional
  std::string output_dir = ".";                        // relative output files are written here
  bool write_files = true;                             // write the outputs' files
  std::optional<ServerSide> server;                    // set: the server side, with no secret key
};

// A JSON document laid out as reports are: indented, numbers in their
// shortest round-trip form (40, not 4E1). Throws InvalidArgumentError on bad JSON.
std::string pretty_json(const std::string& json_text);

// plan_pipeline, then keys, encryption, execution, decryption and the report.
PipelineReport run_pipeline(const PipelineSpec& spec, const RunOptions& options);

}  // namespace fhelium::runtime
