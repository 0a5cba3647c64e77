// YAML pipelines: parsing, refusals before encryption (with file, line,
// column and key), every operation against the clear calculation, the three
// execution modes, and the example pipelines with their error bounds.
#include "fhelium/runtime/pipeline.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fhelium/cpu/cpu_backend.hpp"

namespace fhelium::runtime {
namespace {

// Small insecure parameters (explicit opt-out) keep the suite fast.
const std::string kSmallParams =
    "params: {ring_degree: 4096, q_bits: [55, 40, 40, 40, 40], p_bits: [55], scale_bits: 40, allow_insecure: true}\n";

struct CountingFactory {
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  BackendFactory factory() const {
    auto counter = calls;
    return [counter](const BackendSpec&) {
      ++*counter;
      return cpu::make_cpu_backend();
    };
  }
};

RunOptions cpu_options() {
  RunOptions o;
  o.backend_factory = [](const BackendSpec&) { return cpu::make_cpu_backend(); };
  o.write_files = false;
  return o;
}

PipelineReport run_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return run_pipeline(parse_pipeline(text, "test.yaml", overrides), cpu_options());
}

// The message of the PipelineError that `text` causes, from parsing, planning
// or running; and the run must not have created a backend (nothing encrypted).
std::string refusal(const std::string& text, const std::vector<std::string>& overrides = {},
                    const std::string& base_dir = ".") {
  CountingFactory counting;
  RunOptions options = cpu_options();
  options.backend_factory = counting.factory();
  try {
    const PipelineSpec spec = parse_pipeline(text, "test.yaml", overrides, base_dir);
    (void)run_pipeline(spec, options);
  } catch (const PipelineError& e) {
    EXPECT_EQ(*counting.calls, 0) << "refused only after the backend was created: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a PipelineError";
  return "";
}

const OutputReport& output(const PipelineReport& r, const std::string& name) {
  for (const auto& o : r.outputs) {
    if (o.name == name) return o;
  }
  throw std::runtime_error("no output " + name);
}

// ---- parsing ----

TEST(PipelineParse, DefaultsAndShapes) {
  const PipelineSpec spec =
      parse_pipeline(kSmallParams +
                         "inputs:\n"
                         "  x: [1, 2, 3]\n"
                         "  m: {values: [[1, 2], [3, 4], [5, 6]], encrypted: false}\n"
                         "  r: {random: {distribution: normal, mean: 1, stddev: 2, length: 5, seed: 9}}\n"
                         "steps:\n"
                         "  - {name: y, op: rotate, args: x, step: 1}\n",
                     "p.yaml");
  EXPECT_EQ(spec.name, "p");
  EXPECT_EQ(spec.backend.name, "auto");
  EXPECT_EQ(spec.params.parameters.log_ring_degree, 12);
  EXPECT_EQ(spec.params.parameters.scale, std::ldexp(1.0, 40));
  ASSERT_EQ(spec.inputs.size(), 3u);
  EXPECT_EQ(spec.inputs[0].values, (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(spec.inputs[0].encrypted);
  EXPECT_EQ(spec.inputs[1].rows, 3u);
  EXPECT_EQ(spec.inputs[1].cols, 2u);
  EXPECT_FALSE(spec.inputs[1].encrypted);
  EXPECT_EQ(spec.inputs[2].values.size(), 5u);
  EXPECT_EQ(spec.execution.mode, ExecutionMode::eager);
  EXPECT_EQ(spec.execution.repetitions, 1);
  ASSERT_EQ(spec.outputs.size(), 1u);  // default: the last step
  EXPECT_EQ(spec.outputs[0].value, "y");
  // Seeded random inputs are the same every time.
  const PipelineSpec again =
      parse_pipeline(kSmallParams +
                     "inputs: {r: {random: {distribution: normal, mean: 1, stddev: 2, length: 5, seed: 9}}}\n"
                     "steps: [{name: y, op: negate, args: [r]}]\n");
  EXPECT_EQ(again.inputs[0].values, spec.inputs[2].values);
}

TEST(PipelineParse, OverridesSetKeysByPath) {
  const std::string text = kSmallParams +
                           "inputs: {x: [1, 2]}\n"
                           "steps:\n"
                           "  - {name: a, op: rotate, args: [x], step: 1}\n"
                           "execution: {mode: eager}\n";
  const PipelineSpec spec = parse_pipeline(
      text, "t.yaml", {"execution.mode=program", "steps[0].step=3", "execution.repetitions=4", "backend=cpu"});
  EXPECT_EQ(spec.execution.mode, ExecutionMode::program);
  EXPECT_EQ(spec.execution.repetitions, 4);
  EXPECT_EQ(spec.steps[0].step, 3);
  EXPECT_EQ(spec.backend.name, "cpu");
  const PipelineSpec by_name = parse_pipeline(text, "t.yaml", {"steps.a.step=-2"});
  EXPECT_EQ(by_name.steps[0].step, -2);
  EXPECT_EQ(refusal(text, {"execution.mode=grph"}),
            "--set execution.mode=grph: key 'execution.mode': unknown mode 'grph' (did you mean 'graph'? known: eager, "
            "program, graph)");
  EXPECT_EQ(refusal(text, {"steps[4].step=1"}), "--set steps[4].step=1: key 'steps': has no element [4] (it has 1)");
  EXPECT_EQ(refusal(text, {"execution.mode"}),
            "--set execution.mode: expected KEY=VALUE, for example execution.mode=graph");
}

// ---- bad input: refused before any backend, key or ciphertext exists ----

TEST(PipelineRefusal, DuplicateKeysNameBothLines) {
  const std::string text = kSmallParams +
                           "inputs:\n"
                           "  x: {random: {distribution: uniform, range: [-1, 1], length: 8, seed: 1}}\n"
                           "steps:\n"
                           "  - {name: y, op: add, args: [x, x]}\n"
                           "params: slots8192_scale40_levels7\n";
  EXPECT_EQ(refusal(text),
            "test.yaml:6:1: key 'params': duplicate key 'params': given at line 1 and again at line 6; remove one");
  EXPECT_EQ(refusal(kSmallParams + "inputs:\n  x: {random: {length: 8, seed: 1, seed: 2}}\n"),
            "test.yaml:3:36: key 'inputs.x.random.seed': duplicate key 'seed': given at line 3 and again at line 3; "
            "remove one");
}

TEST(PipelineRefusal, AliasesExpandingBeyondAnyPipelineAreRefusedQuickly) {
  // 40 KB of text that aliases would expand into an 8192 x 8192 matrix.
  std::string row, rows;
  for (int i = 0; i < 8192; ++i) {
    row += i ? ",1" : "1";
    rows += i ? ",*r" : "*r";
  }
  const std::string text =
      kSmallParams + "defs: &r [" + row + "]\nsteps:\n  - {name: y, op: matvec, matrix: [" + rows + "]}\n";
  EXPECT_NE(refusal(text).find("expands to more than 4000000 YAML values"), std::string::npos);
}

TEST(PipelineRefusal, YamlSyntaxErrorNamesLineColumnAndKey) {
  EXPECT_EQ(
      refusal(kSmallParams + "inputs:\n  x: [1, 2, 3\nsteps:\n  - {name: y, op: negate, args: [x]}\n"),
      "test.yaml:4:6: key 'inputs.x': YAML syntax error: end of sequence flow not found: the '[' at line 3, column 6 "
      "is never closed");
  EXPECT_EQ(refusal(kSmallParams + "inputs:\n  x: [1, 2]\n   y: [3]\nsteps: []\n"),
            "test.yaml:4:4: key 'inputs.x.y': YAML syntax error: end of map not found");
  EXPECT_EQ(refusal(kSmallParams + "inputs:\n\tx: [1]\n"),
            "test.yaml:3:3: key 'inputs': YAML syntax error: illegal map value");
}

TEST(PipelineRefusal, UnknownKeysAreNamedWithASuggestion) {
  const std::string text = kSmallParams +
                           "inputs: {x: [1, 2]}\n"
                           "steps:\n"
                           "  - {name: y, op: rotate, args: [x], step: 1}\n"
                           "execution:\n"
                           "  mode: eager\n"
                           "  repetitons: 3\n";
  EXPECT_EQ(refusal(text),
            "test.yaml:7:3: key 'execution.repetitons': unknown key for execution (did you mean "
            "'repetitions'? known: mode, repetitions, warmup, seed)");
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [1, 2]}\nsteps:\n  - {name: y, op: rotate, args: [x], stpe: 1}\n"),
      "test.yaml:4:38: key 'steps[0].stpe': unknown key for operation rotate (did you mean 'step'? known: name, op, "
      "args, step)");
  EXPECT_EQ(refusal(kSmallParams + "input: {x: [1, 2]}\nsteps: []\n"),
            "test.yaml:2:1: key 'input': unknown key for a pipeline (did you mean 'inputs'? known: name, description, "
            "backend, params, inputs, steps, execution, outputs)");
}

TEST(PipelineRefusal, UnknownOperation) {
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [1, 2]}\nsteps:\n  - {name: y, op: rotat, args: [x], step: 1}\n"),
      "test.yaml:4:19: key 'steps[0].op': unknown operation 'rotat' (did you mean 'rotate'? known: add, add_scalar, "
      "align, bootstrap, conjugate, drop_to_level, inner_product, matvec, multiply, multiply_integer, multiply_plain, "
      "multiply_relinearize_rescale, multiply_scalar, negate, polynomial, relinearize, rescale, rotate, "
      "rotate_hoisted, sub, sub_scalar, sum, sum_slots, to_coefficient, to_ntt)");
}

TEST(PipelineRefusal, UndefinedValueName) {
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2], y: [3, 4]}\n"
                                   "steps:\n"
                                   "  - {name: a, op: add, args: [x, y]}\n"
                                   "  - {name: b, op: multiply, args: [a, z]}\n"),
            "test.yaml:5:39: key 'steps[1].args[1]': undefined value 'z': define it in inputs or in an earlier step "
            "(known: a, x, y)");
  // A later step's name is not defined yet.
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2]}\n"
                                   "steps:\n"
                                   "  - {name: a, op: add, args: [x, b]}\n"
                                   "  - {name: b, op: negate, args: [x]}\n"),
            "test.yaml:4:34: key 'steps[0].args[1]': undefined value 'b': define it in inputs or in an earlier step "
            "(known: x)");
}

TEST(PipelineRefusal, StateConflictsSayWhatToChange) {
  const std::string levels = refusal(kSmallParams +
                                     "inputs: {x: [1, 2], y: [3, 4]}\n"
                                     "steps:\n"
                                     "  - {name: xy, op: multiply_relinearize_rescale, args: [x, y]}\n"
                                     "  - {name: bad, op: add, args: [xy, x]}\n");
  EXPECT_EQ(levels.rfind("test.yaml:5:5: key 'steps[1]': step 'bad' (add): add: operands 'xy' (level 3, scale 2^", 0),
            0u)
      << levels;
  EXPECT_NE(levels.find("and 'x' (level 4, scale 2^40) are at different levels: add a step {name: x_3, op: "
                        "drop_to_level, args: [x], level: 3} and use x_3"),
            std::string::npos)
      << levels;

  const std::string scales = refusal(kSmallParams +
                                     "inputs: {x: [1, 2], y: [3, 4]}\n"
                                     "steps:\n"
                                     "  - {name: xy, op: multiply_relinearize_rescale, args: [x, y]}\n"
                                     "  - {name: x3, op: drop_to_level, args: [x], level: 3}\n"
                                     "  - {name: bad, op: sub, args: [xy, x3]}\n");
  EXPECT_EQ(scales.rfind("test.yaml:6:5: key 'steps[2]': step 'bad' (sub): sub: operands 'xy' (level 3, scale 2^", 0),
            0u)
      << scales;
  EXPECT_NE(scales.find("have different scales: add a step {name: xy_aligned, op: align, args: [xy], to: x3}"),
            std::string::npos)
      << scales;

  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2], y: [3, 4]}\n"
                                   "steps:\n"
                                   "  - {name: m, op: multiply, args: [x, y]}\n"
                                   "  - {name: r, op: rotate, args: [m], step: 1}\n"),
            "test.yaml:5:5: key 'steps[1]': step 'r' (rotate): rotate needs a 2-component ciphertext but 'm' has 3 "
            "components (multiplied, not relinearized): add a relinearize step first");
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2], y: [3, 4]}\n"
                                   "steps:\n"
                                   "  - {name: m, op: multiply, args: [x, y]}\n"
                                   "  - {name: r, op: relinearize, args: [m]}\n"
                                   "  - {name: q, op: multiply, args: [r, r]}\n"
                                   "  - {name: q2, op: relinearize, args: [q]}\n"
                                   "  - {name: z, op: multiply, args: [q2, r]}\n"),
            "test.yaml:8:5: key 'steps[4]': step 'z' (multiply): multiply: the result's scale 2^240.0 does not fit the "
            "modulus at level 4 (2^215.0): rescale the operands first");
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2], w: {values: [3, 4], encrypted: false}}\n"
                                   "steps:\n"
                                   "  - {name: r, op: rotate, args: [w], step: 1}\n"),
            "test.yaml:4:5: key 'steps[0]': step 'r' (rotate): 'w' is a plaintext input, but rotate needs a ciphertext "
            "here: set encrypted: true on input 'w', or use it as the second operand of add, sub, multiply_plain or "
            "inner_product");
}

TEST(PipelineRefusal, ValuesBeyondTheModulusAndSizesBeyondTheSlotsAtTheirLine) {
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1e300, 2]}\nsteps: [{name: y, op: negate, args: [x]}]\n"),
            "test.yaml:2:13: key 'inputs.x': input 'x': values up to 1e+300 at scale 2^40.0 reach 2^1036.6, beyond "
            "the modulus at level 4 (2^215.0): scale the values down");
  const std::string matrix = refusal(kSmallParams +
                                     "inputs:\n  x: [1, 2]\n  W: {values: [[1e308, 1], [1, 1]], encrypted: false}\n"
                                     "steps: [{name: y, op: matvec, args: [x], matrix: W}]\n");
  EXPECT_EQ(
      matrix.rfind("test.yaml:5:9: key 'steps[0]': step 'y' (matvec): multiply_plain_sum: constant '__y_0': values "
                   "up to 1e+308 at scale 2^",
                   0),
      0u)
      << matrix;
  // Refused before 10^10 values are generated.
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: {random: {shape: [100000, 100000]}}}\n"
                                   "steps: [{name: y, op: negate, args: [x]}]\n"),
            "test.yaml:2:30: key 'inputs.x.random.shape': input 'x' of 100000 x 100000 values: the parameters give "
            "2048 slots, and neither a vector nor a matrix side may exceed them");
}

TEST(PipelineRefusal, DepthBeyondTheParameters) {
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [0.5, -0.25]}\n"
                             "steps:\n"
                             "  - {name: x2, op: multiply_relinearize_rescale, args: [x, x]}\n"
                             "  - name: p\n"
                             "    op: polynomial\n"
                             "    args: [x2]\n"
                             "    coefficients: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"),
      "test.yaml:5:5: key 'steps[1]': step 'p' (polynomial) goes below level 0: the calculation needs depth 5 but "
      "the parameters give 4 levels; add 1 prime to params.q_bits or use the preset slots8192_scale30_levels7, or "
      "lower the polynomial's degree");
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [0.5, -0.25]}\n"
                             "steps:\n"
                             "  - {name: a, op: multiply_relinearize_rescale, args: [x, x]}\n"
                             "  - {name: b, op: multiply_relinearize_rescale, args: [a, a]}\n"
                             "  - {name: c, op: multiply_relinearize_rescale, args: [b, b]}\n"
                             "  - {name: d, op: multiply_relinearize_rescale, args: [c, c]}\n"
                             "  - {name: e, op: multiply_relinearize_rescale, args: [d, d]}\n"),
      "test.yaml:8:5: key 'steps[4]': step 'e' (multiply_relinearize_rescale) goes below level 0: the calculation "
      "needs depth 5 but the parameters give 4 levels; add 1 prime to params.q_bits or use the preset "
      "slots8192_scale30_levels7");
}

// The 32-bit family: the depth is measured on its chain (4 more primes carry
// 3 levels), and the suggestion is a preset of the same family.
TEST(PipelineRefusal, DepthBeyondThe32BitPreset) {
  std::string steps = "steps:\n  - {name: x1, op: multiply_relinearize_rescale, args: [x, x]}\n";
  for (int i = 2; i <= 9; ++i) {
    steps += "  - {name: x" + std::to_string(i) + ", op: multiply_relinearize_rescale, args: [x" +
             std::to_string(i - 1) + ", x" + std::to_string(i - 1) + "]}\n";
  }
  EXPECT_EQ(refusal("params: slots8192_scale40_levels7_int32\ninputs: {x: [0.5, -0.25]}\n" + steps),
            "test.yaml:11:5: key 'steps[7]': step 'x8' (multiply_relinearize_rescale) goes below level 0: the "
            "calculation needs depth 9 but the parameters give 7 levels; add 4 primes to params.q_bits or use the "
            "preset slots16384_scale40_levels16_int32");
}

TEST(PipelineRefusal, MissingInputFile) {
  const std::string message = refusal(kSmallParams +
                                          "inputs:\n"
                                          "  x: {file: data/missing.csv}\n"
                                          "steps: [{name: y, op: negate, args: [x]}]\n",
                                      {}, "/nonexistent-dir");
  EXPECT_EQ(message,
            "test.yaml:3:13: key 'inputs.x.file': input file 'data/missing.csv' does not exist (looked for "
            "/nonexistent-dir/data/missing.csv; relative paths are resolved against the pipeline's folder)");
}

TEST(PipelineRefusal, VectorLongerThanTheSlots) {
  EXPECT_EQ(
      refusal(kSmallParams + "inputs:\n"
                             "  x: {random: {length: 3000}}\n"
                             "steps: [{name: y, op: negate, args: [x]}]\n"),
      "test.yaml:3:6: key 'inputs.x': input 'x' has 3000 values but the parameters give 2048 slots (ring degree / "
      "2): shorten it or use a larger ring degree (e.g. a slots4096_... preset)");
  EXPECT_EQ(refusal(kSmallParams + "inputs:\n"
                                   "  X: {random: {shape: [300, 7]}}\n"
                                   "steps: [{name: y, op: negate, args: [X]}]\n"),
            "test.yaml:3:6: key 'inputs.X': input 'X' has 300x7 values (2400 slots packed, rows padded to a power of "
            "two) but the parameters give 2048 slots (ring degree / 2): shorten it or use a larger ring degree (e.g. a "
            "slots4096_... preset)");
}

TEST(PipelineRefusal, ParametersAndArguments) {
  EXPECT_EQ(
      refusal("params: {ring_degree: 4096, q_bits: [55, 40, 40, 40, 40], p_bits: [55]}\n"
              "inputs: {x: [1]}\nsteps: [{name: y, op: negate, args: [x]}]\n"),
      "test.yaml:1:9: key 'params': parameters are insecure: log2(QP) = 270.0 exceeds the maximum 106 for ring "
      "degree 4096, ternary secret, 128-bit security (HE security guidelines 2025); use fewer or smaller primes, a "
      "larger ring degree, or set allow_insecure = true to opt out (in a pipeline: params: {..., allow_insecure: "
      "true}, for testing only)");
  EXPECT_EQ(refusal("params: slots8192_scale40_levels9\ninputs: {x: [1]}\nsteps: []\n"),
            "test.yaml:1:9: key 'params': unknown preset 'slots8192_scale40_levels9': expected one of "
            "slots16384_scale30_levels16, slots16384_scale40_levels16, slots16384_scale50_levels13, "
            "slots32768_scale30_levels34, slots32768_scale40_levels10_bootstrap, slots32768_scale40_levels34, "
            "slots32768_scale50_levels28, "
            "slots8192_scale30_levels7, slots8192_scale40_levels7, slots8192_scale50_levels6, "
            "slots16384_scale40_levels16_int32, slots32768_scale40_levels10_bootstrap_int32, "
            "slots32768_scale40_levels34_int32, slots8192_scale40_levels7_int32");
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1]}\nsteps: [{name: y, op: add, args: [x]}]\n"),
            "test.yaml:3:34: key 'steps[0].args': operation add takes 2 arguments, got 1");
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [1]}\nsteps: [{name: x, op: negate, args: [x]}]\n"),
      "test.yaml:3:16: key 'steps[0].name': the name 'x' is already defined (by an input or an earlier step): names "
      "are assigned once");
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2]}\nsteps: [{name: y, op: rotate, args: [x], step: 2048}]\n"),
            "test.yaml:3:48: key 'steps[0].step': rotation step 2048 is out of range -2047..2047");
  EXPECT_EQ(refusal(kSmallParams + "inputs: {x: [1, 2]}\nsteps: [{name: y, op: negate, args: [x]}]\n"
                                   "outputs: {values: [{value: q}]}\n"),
            "test.yaml:4:20: key 'outputs.values[0]': undefined value 'q' (known: x, y)");
}

// ---- every operation against the clear calculation ----

TEST(PipelineRun, EveryEngineOperationMatchesTheClearCalculation) {
  const PipelineReport r = run_text(kSmallParams + R"(
inputs:
  x: {random: {range: [-1, 1], length: 16, seed: 1}}
  y: {random: {range: [-1, 1], length: 16, seed: 2}}
  p: {random: {range: [-1, 1], length: 16, seed: 3}, encrypted: false}
steps:
  - {name: a, op: add, args: [x, y]}
  - {name: s, op: sub, args: [x, y]}
  - {name: n, op: negate, args: [a]}
  - {name: as, op: add_scalar, args: [x], value: 0.25}
  - {name: ss, op: sub_scalar, args: [x], value: 0.5}
  - {name: ap, op: add, args: [x, p]}
  - {name: pa, op: sub, args: [p, x]}
  - {name: m3, op: multiply, args: [x, y]}
  - {name: m2, op: relinearize, args: [m3]}
  - {name: m, op: rescale, args: [m2]}
  - {name: mp, op: multiply_plain, args: [x, p]}
  - {name: mpr, op: rescale, args: [mp]}
  - {name: ms, op: multiply_scalar, args: [x], value: -0.75}
  - {name: msr, op: rescale, args: [ms]}
  - {name: mi, op: multiply_integer, args: [x], value: -3}
  - {name: d, op: drop_to_level, args: [x], level: 2}
  - {name: r, op: rotate, args: [x], step: 3}
  - {name: rr, op: rotate, args: [x], step: -1}
  - {name: c, op: conjugate, args: [x]}
  - {name: h, op: rotate_hoisted, args: [x], steps: [1, 2, 5]}
  - {name: co, op: to_coefficient, args: [x]}
  - {name: nt, op: to_ntt, args: [co]}
  - {name: su, op: sum, args: [x, y, a]}
  - {name: mrr, op: multiply_relinearize_rescale, args: [x, y]}
  - {name: al, op: align, args: [x], to: mrr}
  - {name: mix, op: add, args: [al, mrr]}
  - {name: ip, op: inner_product, args: [x, y]}
  - {name: ipp, op: inner_product, args: [x, p], width: 4}
  - {name: sl, op: sum_slots, args: [x]}
outputs:
  values: [a, mrr, {value: h_2, max_error: 1.0e-6}]
)");
  if (std::getenv("PIPELINE_DUMP")) std::cout << r.to_json();
  ASSERT_EQ(r.steps.size(), 29u);
  for (const StepReport& s : r.steps) {
    ASSERT_TRUE(s.error) << s.state.name;
    EXPECT_LT(s.error->max, 1e-6) << s.state.name;
    EXPECT_GT(s.error->bits, 19) << s.state.name;
    EXPECT_TRUE(s.median_ms) << s.state.name;
  }
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(output(r, "h_2").error.count, 16u);
  EXPECT_TRUE(r.relinearization_key);
  EXPECT_TRUE(r.conjugation_key);
  EXPECT_EQ(r.rotation_steps, (std::set<long>{-1, 1, 2, 3, 4, 5, 8}));
  EXPECT_EQ(r.steps[9].state.level, 3);  // m: rescaled once
  EXPECT_EQ(r.steps[7].state.components, 3);
  EXPECT_EQ(r.steps[20].state.domain, Domain::coefficient);
  EXPECT_EQ(r.steps[26].state.length, 1u);  // inner product: every slot holds the sum
}

// ---- composite steps ----

std::string coefficient_list(int degree) {
  std::string out;
  for (int i = 0; i <= degree; ++i) {
    out += (i ? ", " : "") + std::to_string((i % 2 ? -1.0 : 1.0) / (i + 1));
  }
  return out;
}

const std::string kDeepParams =
    "params: {ring_degree: 4096, q_bits: [55, 40, 40, 40, 40, 40, 40, 40, 40], p_bits: [55], allow_insecure: true}\n";

TEST(PipelineComposite, PolynomialDepthsOfBothMethods) {
  const auto depth = [](const std::string& method, int degree) {
    return plan_pipeline(
               parse_pipeline(kDeepParams +
                              "inputs: {x: [0.5]}\nsteps:\n  - {name: p, op: polynomial, args: [x], method: " + method +
                              ", coefficients: [" + coefficient_list(degree) + "]}\n"))
        .depth;
  };
  // Both names select the one evaluator (circuits::evaluate_polynomial):
  // depth ceil(log2(degree + 1)).
  EXPECT_EQ(depth("bsgs", 1), 1);
  EXPECT_EQ(depth("bsgs", 3), 2);
  EXPECT_EQ(depth("bsgs", 7), 3);
  EXPECT_EQ(depth("bsgs", 8), 4);
  EXPECT_EQ(depth("bsgs", 15), 4);
  EXPECT_EQ(depth("paterson_stockmeyer", 15), 4);
  for (int d = 1; d <= 24; ++d) {
    const int expected = static_cast<int>(std::ceil(std::log2(d + 1.0)));
    EXPECT_EQ(depth("bsgs", d), expected) << d;
    EXPECT_EQ(depth("paterson_stockmeyer", d), expected) << d;
  }
}

TEST(PipelineComposite, PolynomialsMatchHornerInDoublePrecision) {
  for (const std::string method : {"bsgs", "paterson_stockmeyer"}) {
    for (int degree : {1, 2, 3, 5, 8, 13, 21}) {
      const PipelineReport r = run_text(kDeepParams +
                                        "inputs: {x: {random: {range: [-1, 1], length: 64, seed: 4}}}\n"
                                        "steps:\n  - {name: p, op: polynomial, args: [x], method: " +
                                        method + ", coefficients: [" + coefficient_list(degree) +
                                        "]}\n"
                                        "outputs: {values: [{value: p, max_error: 1.0e-5}]}\n");
      EXPECT_TRUE(r.ok) << method << " degree " << degree << ": " << r.outputs[0].error.max;
      EXPECT_EQ(r.outputs[0].error.count, 64u);
      EXPECT_GT(r.outputs[0].error.max_expected, 0.5);
    }
  }
}

TEST(PipelineComposite, MatvecOfAnyShapeMatchesTheRowByRowProduct) {
  struct Case {
    std::string matrix;
    std::vector<std::vector<double>> m;
  };
  const std::vector<double> x = {0.5, -1, 0.25, 2, -0.75};
  const std::vector<Case> cases = {
      {"[[1, 2, 3, 4, 5], [0, 1, 0, 1, 0], [-1, -1, -1, -1, -1]]",
       {{1, 2, 3, 4, 5}, {0, 1, 0, 1, 0}, {-1, -1, -1, -1, -1}}},
      {"[[1, 0, 0, 0, 0], [0, 0, 0, 0, 2], [0, 0, 3, 0, 0], [0, 4, 0, 0, 0], [5, 0, 0, 0, 0], [1, 1, 1, 1, 1], "
       "[0.5, 0, 0, 0, 0]]",
       {{1, 0, 0, 0, 0},
        {0, 0, 0, 0, 2},
        {0, 0, 3, 0, 0},
        {0, 4, 0, 0, 0},
        {5, 0, 0, 0, 0},
        {1, 1, 1, 1, 1},
        {0.5, 0, 0, 0, 0}}},
  };
  for (const Case& c : cases) {
    for (const std::string method : {"diagonal", "bsgs"}) {
      const PipelineReport r = run_text(kSmallParams +
                                        "inputs: {x: [0.5, -1, 0.25, 2, -0.75]}\n"
                                        "steps:\n  - {name: y, op: matvec, args: [x], method: " +
                                        method + ", matrix: " + c.matrix +
                                        "}\n"
                                        "outputs: {values: [{value: y, max_error: 1.0e-6}]}\n");
      ASSERT_EQ(r.outputs[0].count, c.m.size());
      for (std::size_t row = 0; row < c.m.size(); ++row) {
        double expected = 0;
        for (std::size_t k = 0; k < x.size(); ++k) expected += c.m[row][k] * x[k];
        EXPECT_NEAR(r.outputs[0].expected[row], expected, 1e-12);
        EXPECT_NEAR(r.outputs[0].values[row], expected, 1e-6);
      }
      EXPECT_TRUE(r.ok) << method << ": " << r.outputs[0].error.max;
      EXPECT_EQ(r.steps[0].state.level, 3);  // one rescale
    }
  }
  // Seven columns need a period of eight: a vector of five values does not fit.
  EXPECT_EQ(
      refusal(kSmallParams + "inputs: {x: [1, 2, 3, 4, 5]}\nsteps:\n  - {name: y, op: matvec, args: [x], matrix: [[1, "
                             "2, 3, 4, 5, 6, 7]]}\n"),
      "test.yaml:4:5: key 'steps[0]': step 'y' (matvec): matrix is 1x7 but 'x' has 5 values: the matrix needs one "
      "column per value");
}

TEST(PipelineComposite, MatvecBabyStepGiantStepNeedsFewerKeys) {
  const std::string text = kSmallParams +
                           "inputs:\n"
                           "  x: {random: {length: 16, seed: 8}}\n"
                           "  W: {random: {shape: [16, 16], seed: 9}, encrypted: false}\n"
                           "steps: [{name: y, op: matvec, args: [x], matrix: W}]\n"
                           "outputs: {values: [{value: y, max_error: 1.0e-6}]}\n"
                           "execution: {seed: 3}\n";
  const PipelineReport diagonal = run_text(text);
  const PipelineReport bsgs = run_text(text, {"steps[0].method=bsgs"});
  EXPECT_EQ(diagonal.rotation_steps.size(), 15u);
  EXPECT_EQ(bsgs.rotation_steps, (std::set<long>{1, 2, 3, 4, 8, 12}));
  EXPECT_TRUE(diagonal.ok && bsgs.ok);
  // The expected values are each program's own clear run: equal up to the order of the additions.
  ASSERT_EQ(diagonal.outputs[0].expected.size(), bsgs.outputs[0].expected.size());
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(diagonal.outputs[0].expected[i], bsgs.outputs[0].expected[i], 1e-12);
    EXPECT_NEAR(diagonal.outputs[0].values[i], bsgs.outputs[0].values[i], 2e-6);
  }
}

TEST(PipelineComposite, InnerProductAndSumOfSlots) {
  const PipelineReport r = run_text(kSmallParams + R"(
inputs:
  a: [1, 2, 3, 4]
  b: [0.5, 0.25, -1, 2]
  w: {values: [1, -1, 1, -1], encrypted: false}
steps:
  - {name: ab, op: inner_product, args: [a, b]}
  - {name: aw, op: inner_product, args: [a, w]}
  - {name: s, op: sum_slots, args: [a]}
  - {name: pairs, op: sum_slots, args: [a], width: 2}
outputs:
  values:
    - {value: ab, max_error: 1.0e-6}
    - {value: aw, max_error: 1.0e-6}
    - {value: s, max_error: 1.0e-6}
    - {value: pairs, count: 2, stride: 2, max_error: 1.0e-6}
)");
  EXPECT_TRUE(r.ok);
  EXPECT_NEAR(output(r, "ab").values.at(0), 0.5 + 0.5 - 3 + 8, 1e-6);
  EXPECT_NEAR(output(r, "aw").values.at(0), 1 - 2 + 3 - 4, 1e-6);
  EXPECT_NEAR(output(r, "s").values.at(0), 10, 1e-6);
  EXPECT_EQ(output(r, "s").count, 1u);
  EXPECT_NEAR(output(r, "pairs").values.at(0), 3, 1e-6);
  EXPECT_NEAR(output(r, "pairs").values.at(1), 7, 1e-6);
}

// ---- execution modes ----

const std::string kModesPipeline = kSmallParams + R"(
inputs:
  x: {random: {range: [-1, 1], length: 8, seed: 21}}
  y: {random: {range: [-1, 1], length: 8, seed: 22}}
steps:
  - {name: m, op: matvec, args: [x], matrix: [[1, 2, 0, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]}
  - {name: y2, op: drop_to_level, args: [y], level: 3}
  - {name: s, op: add, args: [m, y2]}
  - {name: p, op: polynomial, args: [s], coefficients: [0.1, 0.5, 0.25]}
  - {name: r, op: rotate, args: [p], step: 1}
execution: {seed: 99, repetitions: 2}
outputs:
  values:
    - {value: r, max_error: 1.0e-6}
    - {value: s, max_error: 1.0e-6}
)";

TEST(PipelineModes, EagerProgramAndGraphAgree) {
  const PipelineReport eager = run_text(kModesPipeline, {"execution.mode=eager"});
  const PipelineReport program = run_text(kModesPipeline, {"execution.mode=program"});
  const PipelineReport graph = run_text(kModesPipeline, {"execution.mode=graph", "execution.warmup=1"});
  for (const PipelineReport* r : {&eager, &program, &graph}) {
    EXPECT_TRUE(r->ok) << to_string(r->mode);
    EXPECT_EQ(r->total_ms.size(), 2u);
    EXPECT_EQ(r->outputs.size(), 2u);
    EXPECT_EQ(r->steps.size(), 5u);
  }
  // The same seed, keys and encryptions: eager steps and the Program give identical residues.
  EXPECT_EQ(eager.outputs[0].values, program.outputs[0].values);
  EXPECT_EQ(eager.outputs[1].values, program.outputs[1].values);
  EXPECT_EQ(eager.outputs[0].error.max, program.outputs[0].error.max);
  // Per-step errors only where steps run one by one; per-step times also in
  // program mode (the backend's timing events), none inside a graph replay.
  EXPECT_TRUE(eager.steps[3].median_ms && eager.steps[3].error);
  double program_steps_ms = 0;
  for (const StepReport& step : program.steps) {
    ASSERT_TRUE(step.median_ms.has_value()) << step.state.name;
    EXPECT_GE(*step.median_ms, 0.0) << step.state.name;
    EXPECT_FALSE(step.error.has_value()) << step.state.name;
    program_steps_ms += *step.median_ms;
  }
  EXPECT_GT(program.steps[3].median_ms.value_or(0), 0.0) << "the polynomial step takes time";
  EXPECT_LE(program_steps_ms, 1.5 * *std::max_element(program.total_ms.begin(), program.total_ms.end()));
  EXPECT_FALSE(graph.steps[3].median_ms || graph.steps[3].error);
  EXPECT_TRUE(graph.capture_ms.has_value());
  EXPECT_TRUE(graph.first_replay_ms.has_value());
  // Replays with new encryptions of the same values: the same expected values.
  EXPECT_EQ(graph.outputs[0].expected, eager.outputs[0].expected);
  for (std::size_t i = 0; i < graph.outputs[0].values.size(); ++i) {
    EXPECT_NEAR(graph.outputs[0].values[i], eager.outputs[0].values[i], 2e-6);
  }
}

TEST(PipelineModes, InputsCanBeOutputsInEveryMode) {
  for (const char* mode : {"eager", "program", "graph"}) {
    const PipelineReport r =
        run_text(kSmallParams +
                     "inputs: {x: {random: {length: 4, seed: 5}}}\n"
                     "steps: [{name: y, op: rotate, args: [x], step: 1}]\n"
                     "outputs: {values: [{value: x, max_error: 1.0e-6}, {value: y, max_error: 1.0e-6}]}\n",
                 {std::string("execution.mode=") + mode, "inputs.x.random.seed=6"});
    EXPECT_TRUE(r.ok) << mode;
    ASSERT_EQ(r.outputs.size(), 2u);
    EXPECT_EQ(r.outputs[0].expected[1], r.outputs[1].expected[0]) << mode;  // y is x rotated by one
  }
}

// ---- files and the report ----

TEST(PipelineFiles, CsvAndJsonInputsAndOutputFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("fhelium-pipeline-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "data");
  std::ofstream(dir / "data" / "m.csv") << "# a comment\nc0,c1,c2\n1,2,3\n4,5,6\n";
  std::ofstream(dir / "data" / "v.json") << R"({"values": [0.5, -0.5, 1]})";
  std::ofstream(dir / "data" / "col.txt") << "1\n2\n3\n";
  std::ofstream(dir / "p.yaml") << kSmallParams << R"(
inputs:
  M: {file: data/m.csv, encrypted: false}
  v: {file: data/v.json}
  c: {file: data/col.txt}
steps:
  - {name: y, op: matvec, args: [v], matrix: M}
  - {name: s, op: add, args: [v, c]}
outputs:
  values:
    - {value: y, file: out/y.csv}
    - {value: s, file: out/s.json, max_error: 1.0e-6}
)";
  const PipelineSpec spec = load_pipeline((dir / "p.yaml").string());
  ASSERT_EQ(spec.inputs.size(), 3u);
  EXPECT_EQ(spec.inputs[0].rows, 2u);
  EXPECT_EQ(spec.inputs[0].cols, 3u);
  EXPECT_EQ(spec.inputs[0].values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(spec.inputs[1].values, (std::vector<double>{0.5, -0.5, 1}));
  EXPECT_EQ(spec.inputs[2].values, (std::vector<double>{1, 2, 3}));
  RunOptions options = cpu_options();
  options.write_files = true;
  options.output_dir = (dir / "results").string();
  const PipelineReport r = run_pipeline(spec, options);
  EXPECT_TRUE(r.ok);
  EXPECT_NEAR(r.outputs[0].values[0], 1 * 0.5 - 2 * 0.5 + 3, 1e-6);
  EXPECT_NEAR(r.outputs[0].values[1], 4 * 0.5 - 5 * 0.5 + 6, 1e-6);
  std::ifstream csv(dir / "results" / "out" / "y.csv");
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(csv, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "slot,value,expected");
  EXPECT_EQ(lines[1].rfind("0,2.4999", 0) == 0 || lines[1].rfind("0,2.5000", 0) == 0, true) << lines[1];
  std::ifstream json_file(dir / "results" / "out" / "s.json");
  std::stringstream text;
  text << json_file.rdbuf();
  const boost::json::value doc = boost::json::parse(text.str());
  EXPECT_EQ(doc.at("output").as_string(), "s");
  EXPECT_EQ(doc.at("values").as_array().size(), 3u);
  EXPECT_EQ(doc.at("expected").as_array()[2].to_number<double>(), 4.0);
  std::filesystem::remove_all(dir);
}

TEST(PipelineReportJson, HoldsStatesErrorsTimingsAndMemory) {
  const PipelineReport r = run_text(kModesPipeline, {"execution.mode=eager"});
  const boost::json::value doc = boost::json::parse(r.to_json());
  EXPECT_EQ(doc.at("ok").as_bool(), true);
  EXPECT_EQ(doc.at("backend").at("name").as_string(), "cpu");
  EXPECT_EQ(doc.at("params").at("ring_degree").to_number<std::uint64_t>(), 4096u);
  EXPECT_EQ(doc.at("params").at("allow_insecure").as_bool(), true);
  EXPECT_EQ(doc.at("execution").at("mode").as_string(), "eager");
  EXPECT_EQ(doc.at("plan").at("depth").to_number<int>(), r.depth);
  EXPECT_TRUE(doc.at("plan").at("keys").at("relinearization").as_bool());
  const auto& steps = doc.at("steps").as_array();
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].at("op").as_string(), "matvec");
  EXPECT_EQ(steps[0].at("level").to_number<int>(), 3);
  EXPECT_EQ(steps[0].at("domain").as_string(), "ntt");
  EXPECT_GT(steps[0].at("median_ms").to_number<double>(), 0);
  EXPECT_LT(steps[3].at("error").at("max").to_number<double>(), 1e-6);
  EXPECT_GT(steps[3].at("error").at("bits").to_number<double>(), 19);
  const auto& out = doc.at("outputs").as_array()[0];
  EXPECT_EQ(out.at("name").as_string(), "r");
  for (const char* key : {"max", "mean", "rms", "bits"}) EXPECT_TRUE(out.at("error").as_object().contains(key)) << key;
  EXPECT_EQ(out.at("within_bound").as_bool(), true);
  EXPECT_EQ(doc.at("timings").at("total_ms").as_array().size(), 2u);
  EXPECT_GT(doc.at("memory").at("process_peak_bytes").to_number<double>(), 0);
}

TEST(PipelineReportJson, AnExceededBoundIsAFailure) {
  const PipelineReport r = run_text(kSmallParams +
                                    "inputs: {x: {random: {length: 16}}}\n"
                                    "steps: [{name: y, op: multiply_relinearize_rescale, args: [x, x]}]\n"
                                    "outputs: {values: [{value: y, max_error: 1.0e-15}]}\n");
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].rfind("output 'y': max error ", 0), 0u) << r.failures[0];
  EXPECT_FALSE(r.outputs[0].within_bound);
}

// ---- the example pipelines ----

PipelineReport run_example(const std::string& name) {
  const std::string path = std::string(FHELIUM_SOURCE_DIR) + "/examples/pipelines/" + name + ".yaml";
  const PipelineReport r = run_pipeline(load_pipeline(path, {"backend=cpu"}), cpu_options());
  std::cout << name << ": mode " << to_string(r.mode) << ", depth " << r.depth << ", " << r.total_median_ms
            << " ms median";
  for (const auto& o : r.outputs)
    std::cout << "; " << o.name << " max error " << o.error.max << " (" << o.error.bits << " bits)";
  std::cout << "\n";
  return r;
}

// The examples on the 32-bit word family's preset (the rational chain:
// several primes per level), within the bounds they state.
TEST(PipelineExamples, RunOnThe32BitFamily) {
  for (const std::string name : {"logreg", "matvec", "sigmoid"}) {
    const std::string path = std::string(FHELIUM_SOURCE_DIR) + "/examples/pipelines/" + name + ".yaml";
    const PipelineReport r =
        run_pipeline(load_pipeline(path, {"backend=cpu", "params=slots8192_scale40_levels7_int32"}), cpu_options());
    EXPECT_TRUE(r.ok) << name;
    ASSERT_FALSE(r.outputs.empty()) << name;
    for (const auto& o : r.outputs) {
      EXPECT_TRUE(o.within_bound) << name << " " << o.name;
      EXPECT_GT(o.error.bits, 16) << name << " " << o.name;
    }
  }
}

TEST(PipelineExamples, Matvec) {
  const PipelineReport r = run_example("matvec");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mode, ExecutionMode::graph);
  EXPECT_EQ(r.total_ms.size(), 5u);
  EXPECT_EQ(r.rotation_steps.size(), 15u);
  const OutputReport& y = output(r, "y");
  EXPECT_EQ(y.count, 16u);
  EXPECT_LT(y.error.max, 5e-6);
  EXPECT_GT(y.error.bits, 17);
  EXPECT_EQ(y.values.size(), 16u);
}

TEST(PipelineExamples, Sigmoid) {
  const PipelineReport r = run_example("sigmoid");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.depth, 5);  // t costs one level, the degree-15 polynomial ceil(log2 16) = 4
  const OutputReport& s = output(r, "sigmoid");
  EXPECT_EQ(s.count, 8192u);
  EXPECT_LT(s.error.max, 5e-5);
  EXPECT_LT(s.error.rms, 5e-6);
  // The polynomial is a sigmoid: about 0 at x = -8, 1/2 at 0, 1 at 8 (its own error is below 1.4e-3).
  for (std::size_t i = 0; i < s.expected.size(); ++i) {
    EXPECT_GT(s.expected[i], -0.002);
    EXPECT_LT(s.expected[i], 1.002);
  }
  ASSERT_TRUE(r.steps[2].median_ms && r.steps[2].error);
}

TEST(PipelineExamples, LogisticRegression) {
  const PipelineReport r = run_example("logreg");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.depth, 6);
  EXPECT_EQ(r.rotation_steps, (std::set<long>{1, 2, 4}));
  const OutputReport& p = output(r, "probabilities");
  EXPECT_EQ(p.count, 512u);
  EXPECT_EQ(p.stride, 8u);
  EXPECT_LT(p.error.max, 1e-5);
  EXPECT_LT(output(r, "logits").error.max, 5e-6);
}

// Deeper than the modulus: four sign-iteration steps with a bootstrap between
// each (N = 2^12, insecure parameters); each bootstrap lands at level 2.
TEST(PipelineExamples, SignWithThreeBootstraps) {
  const PipelineReport r = run_example("sign");
  EXPECT_TRUE(r.ok);
  int bootstraps = 0;
  for (const StepReport& step : r.steps) {
    if (step.state.op != "bootstrap") continue;
    ++bootstraps;
    EXPECT_EQ(step.state.level, 2) << step.state.name;
  }
  EXPECT_EQ(bootstraps, 3);
  const OutputReport& s = output(r, "s4");
  EXPECT_EQ(s.count, 2048u);
  EXPECT_LT(s.error.max, 1e-6);
  // x in [0.2, 1] moves towards 1 at every step: (3x - x^3) / 2 > x.
  for (double v : s.expected) EXPECT_GT(v, 0.6);
}

// A bootstrap of a short vector runs on its period's slots (the trace and one
// EvalMod): fewer levels for each special FFT of 4 slots, the same message.
TEST(PipelineBootstrap, ShortVectorsBootstrapOnTheirPeriod) {
  const std::string text =
      "params: {ring_degree: 4096, q_bits: [60, 40, 40, 40, 40, 40, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, "
      "60], p_bits: [60, 60, 60, 60], scale_bits: 40, allow_insecure: true}\n"
      "inputs:\n"
      "  x: {random: {distribution: uniform, range: [-1, 1], length: LENGTH, seed: 3}}\n"
      "steps:\n"
      "  - {name: y, op: bootstrap, args: [x]}\n"
      "outputs:\n"
      "  values: [{value: y, max_error: 1.0e-6}]\n";
  for (const auto& [length, level] : {std::pair{"100", 2}, std::pair{"3", 4}}) {
    std::string t = text;
    t.replace(t.find("LENGTH"), 6, length);
    const PipelineReport r = run_text(t);
    EXPECT_TRUE(r.ok) << length;
    // 4 slots: two levels for each special FFT instead of three.
    EXPECT_EQ(r.steps.back().state.level, level) << length;
    EXPECT_LT(output(r, "y").error.max, 1e-6) << length;
  }
}

// The 32-bit family's bootstrapping preset (at N = 2^12 for the test): a
// dense secret through the encapsulation, 4-byte words, 10 levels left; a
// short vector, so on its period's slots (full slots: Bootstrap.*/W32).
TEST(PipelineBootstrap, TheInt32PresetBootstraps) {
  const PipelineReport r = run_text(
      "params: {preset: slots32768_scale40_levels10_bootstrap_int32, ring_degree: 4096, allow_insecure: true}\n"
      "inputs:\n"
      "  x: {random: {distribution: uniform, range: [-1, 1], length: 100, seed: 3}}\n"
      "steps:\n"
      "  - {name: y, op: bootstrap, args: [x]}\n"
      "outputs:\n"
      "  values: [{value: y, max_error: 1.0e-6}]\n");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.parameters.word_size, WordSize::bits32);
  EXPECT_EQ(r.steps.back().state.level, 10);
  EXPECT_LT(output(r, "y").error.max, 1e-6);
}

// A bootstrap step's options reach the circuit's configuration: the levels
// of each special FFT, the double angles, the cosine's degree and the
// arcsine correction each move the output level; Horner giants need fewer
// rotation keys; an option out of range is refused by name.
TEST(PipelineBootstrap, OptionsReachTheConfiguration) {
  const auto text = [](const std::string& options) {
    return "params: {ring_degree: 4096, q_bits: [60, 40, 40, 40, 40, 40, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, "
           "60, 60], p_bits: [60, 60, 60, 60], scale_bits: 40, allow_insecure: true}\n"
           "inputs:\n"
           "  x: {random: {distribution: uniform, range: [-1, 1], length: 100, seed: 3}}\n"
           "steps:\n"
           "  - {name: y, op: bootstrap, args: [x]" +
           options +
           "}\n"
           "outputs:\n"
           "  values: [{value: y, max_error: 1.0e-6}]\n";
  };
  const PipelinePlan plain = plan_pipeline(parse_pipeline(text("")));
  const PipelinePlan shallow =
      plan_pipeline(parse_pipeline(text(", coeff_to_slot_levels: 2, slot_to_coeff_levels: 2")));
  EXPECT_EQ(shallow.steps.back().level, plain.steps.back().level + 2);
  const auto level_with = [&](const std::string& options) {
    return plan_pipeline(parse_pipeline(text(options))).steps.back().level - plain.steps.back().level;
  };
  EXPECT_EQ(level_with(", double_angle: 3"), -1);
  EXPECT_EQ(level_with(", cosine_degree: 31"), 1);
  EXPECT_EQ(level_with(", arcsine_correction: false"), 2);
  const PipelinePlan horner = plan_pipeline(parse_pipeline(text(", horner_giants: true")));
  EXPECT_LT(horner.keys.rotation_steps.size(), plain.keys.rotation_steps.size());
  EXPECT_EQ(horner.steps.back().level, plain.steps.back().level);
  const PipelineReport r = run_text(text(", coeff_to_slot_levels: 2, slot_to_coeff_levels: 2, message_ratio: 256"));
  EXPECT_TRUE(r.ok);
  EXPECT_LT(output(r, "y").error.max, 1e-6);
  EXPECT_NE(refusal(text(", coeff_to_slot_levels: 0")).find("coeff_to_slot_levels"), std::string::npos);
  EXPECT_NE(refusal(text(", message_ratio: 0.5")).find("message_ratio must be in 1..65536"), std::string::npos);
  EXPECT_NE(refusal(text(", ratio: 2")).find("horner_giants"), std::string::npos);  // the known keys are listed
}

// ---- the command-line tool ----

// The `fhelium` binary of this build tree (tests/runtime/ -> apps/).
std::string fhelium_binary() {
  const auto exe = std::filesystem::read_symlink("/proc/self/exe");
  const auto path = exe.parent_path().parent_path().parent_path() / "apps" / "fhelium";
  return std::filesystem::exists(path) ? path.string() : "";
}

struct Command {
  int rc;
  std::string out;  // stdout
  std::string err;  // stderr
};

Command run_command(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path() / ("fhelium-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cmd = "cd " + dir.string() + " && " + fhelium_binary() + " " + args + " >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  const auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
}

TEST(PipelineCommandLine, SubcommandsExitCodesAndOneLineReasons) {
  if (fhelium_binary().empty()) GTEST_SKIP() << "the fhelium target is not built";
  const std::string examples = std::string(FHELIUM_SOURCE_DIR) + "/examples/pipelines/";
  for (const char* sub : {"", "demo ", "params ", "backends ", "run ", "bench "}) {
    const Command help = run_command(std::string(sub) + "--help");
    EXPECT_EQ(help.rc, 0) << sub;
    EXPECT_NE(help.out.find("Usage:"), std::string::npos) << sub;
  }
  EXPECT_NE(run_command("run --help").out.find("--set"), std::string::npos);
  EXPECT_NE(run_command("run").rc, 0);  // the pipeline is required

  const Command check = run_command("run --check " + examples + "logreg.yaml");
  EXPECT_EQ(check.rc, 0) << check.err;
  EXPECT_NE(check.out.find("depth 6 of 7 levels"), std::string::npos) << check.out;

  std::ofstream(std::filesystem::temp_directory_path() / "fhelium-bad.yaml")
      << "params: slots8192_scale40_levels7\ninputs: {x: [1]}\nsteps:\n  - {name: y, op: rotat, args: [x], step: 1}\n";
  const Command bad = run_command("run " + (std::filesystem::temp_directory_path() / "fhelium-bad.yaml").string());
  EXPECT_EQ(bad.rc, 2);
  EXPECT_EQ(bad.err.rfind("fhelium: " + (std::filesystem::temp_directory_path() / "fhelium-bad.yaml").string() +
                              ":4:19: key 'steps[0].op': unknown operation 'rotat' (did you mean 'rotate'?",
                          0),
            0u)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;

  const Command params = run_command("params slots8192_scale40_levels7");
  EXPECT_EQ(params.rc, 0);
  EXPECT_NE(params.out.find("margin 30.0 bits"), std::string::npos) << params.out;
  EXPECT_NE(params.out.find("key switching: 8 digits"), std::string::npos) << params.out;
  const Command unknown = run_command("params slots8192_scale40_levels9");
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_EQ(unknown.err.rfind("fhelium: unknown preset 'slots8192_scale40_levels9'", 0), 0u) << unknown.err;

  const Command backends = run_command("backends");
  EXPECT_EQ(backends.rc, 0);
  EXPECT_NE(backends.out.find("cpu        version"), std::string::npos) << backends.out;

  const Command run = run_command("run " + examples +
                                  "sigmoid.yaml --backend cpu -q -o reports/r.json "
                                  "--set execution.repetitions=1");
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("bound 5e-05 ok"), std::string::npos) << run.out;
  const auto dir = std::filesystem::temp_directory_path() / ("fhelium-cli-" + std::to_string(::getpid()));
  std::ifstream report(dir / "reports" / "r.json");
  std::stringstream text;
  text << report.rdbuf();
  const boost::json::value doc = boost::json::parse(text.str());
  EXPECT_TRUE(doc.at("ok").as_bool());
  EXPECT_EQ(doc.at("execution").at("repetitions").to_number<int>(), 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "reports" / "sigmoid.json"));  // the output file beside the report

  const Command bench = run_command("bench --backend cpu --ops add rescale --runs 2");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  const boost::json::value b = boost::json::parse(bench.out);
  EXPECT_EQ(b.at("backend").at("name").as_string(), "cpu");
  EXPECT_EQ(b.at("presets").as_array()[0].at("results").as_array().size(), 2u);
  EXPECT_EQ(run_command("bench --backend cpu --ops rotat").rc, 2);

  const Command show = run_command("demo --show-pipeline");
  EXPECT_EQ(show.rc, 0);
  EXPECT_NO_THROW((void)parse_pipeline(show.out));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fhelium::runtime
