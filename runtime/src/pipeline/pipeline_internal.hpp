// Pipeline internals shared by the parser, the compiler and the runner.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fhelium/runtime/pipeline.hpp"
#include "fhelium/runtime/program.hpp"

namespace fhelium::runtime::pipeline_detail {

using Slots = std::vector<std::complex<double>>;

std::size_t edit_distance(const std::string& a, const std::string& b);
// "(known: a, b, c)", with "did you mean 'x'?" when one is close to `got`.
std::string known_list(const std::vector<std::string>& known, const std::string& got);
bool is_identifier(const std::string& s);
std::size_t next_power_of_two(std::size_t n);

// The state the compiler tracks for every value (the Engine's rules on it).
struct IrState {
  int level = 0;
  double scale = 1;
  Domain domain = Domain::ntt;
  int components = 2;
};

struct IrValue {
  std::string name;   // unique: user names for inputs and step results, "__..." for the rest
  std::string label;  // for messages: "'x'" or "an intermediate value of step 'p'"
  ValueKind kind = ValueKind::result;
  IrState state;
  int input = -1;      // kind input: index into spec.inputs
  Slots constant;      // kind constant: every slot's value
  bool named = false;  // an input or a step result
};

// One Engine operation, as a Program node.
struct IrOp {
  OpKind op = OpKind::add;
  std::vector<int> args;
  std::vector<int> results;
  double scalar = 0;
  double scalar_scale = 0;
  std::int64_t integer = 0;
  int level = 0;
  long step = 0;
  std::vector<long> steps;
  int step_index = -1;
};

// A name the pipeline can refer to: an input or a step result.
struct NamedValue {
  int ir = -1;     // -1: a plaintext input (encoded where it is used)
  int input = -1;  // inputs: index into spec.inputs
  int step = -1;   // step results: index into spec.steps
  bool encrypted = true;
  std::size_t length = 0;  // logical slots
  std::size_t period = 1;  // the slots repeat with this period (a power of two)
  Slots clear;             // the expected value of every slot (double precision)
};

struct Compiled {
  PipelinePlan plan;
  std::vector<IrValue> values;
  std::vector<IrOp> ops;
  std::vector<std::pair<std::size_t, std::size_t>> step_ops;  // [begin, end) into ops, per step
  std::vector<std::vector<std::string>> step_results;         // names each step defines
  std::map<std::string, NamedValue> named;
  std::vector<Slots> input_slots;  // per spec input: the slots encoded
};

// Context, states, depth, keys and the expected values; throws PipelineError.
Compiled compile_pipeline(const PipelineSpec& spec);

}  // namespace fhelium::runtime::pipeline_detail
