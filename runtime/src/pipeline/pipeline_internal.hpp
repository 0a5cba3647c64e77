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

// A name the pipeline can refer to: an input or a step result.
struct NamedValue {
  ValueRef ref;    // in the builder; ref.id < 0 for a plaintext input (a constant where it is used)
  int input = -1;  // inputs: index into spec.inputs
  int step = -1;   // step results: index into spec.steps
  bool encrypted = true;
  std::size_t length = 0;  // logical slots
  std::size_t period = 1;  // the slots repeat with this period (a power of two)
  Slots clear;             // every slot's expected value (double precision): evaluate_clear of the program
};

struct Compiled {
  PipelinePlan plan;
  // The calculation: every encrypted input an input of the builder, every
  // step result named after the step. Outputs are added by the runner.
  ProgramBuilder builder;
  std::vector<std::pair<std::size_t, std::size_t>> step_nodes;  // [begin, end) into the nodes, per step
  std::vector<std::vector<std::string>> step_results;           // names each step defines
  std::map<std::string, NamedValue> named;
  std::vector<Slots> input_slots;  // per spec input: the slots encoded
};

// Context, states, depth, keys and the expected values; throws PipelineError.
Compiled compile_pipeline(const PipelineSpec& spec);

}  // namespace fhelium::runtime::pipeline_detail
