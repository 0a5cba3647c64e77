// Data-parallel pipeline runs (RunOptions.devices) on several cpu backends:
// each repetition's outputs have the same residues as on one device (their
// digests), every output is within its bound, and the repetitions are dealt
// round-robin; eager mode and negative devices are refused before anything runs.
#include <gtest/gtest.h>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/runtime/pipeline.hpp"

namespace fhelium::runtime {
namespace {

const std::string kPipeline = R"(
params: {ring_degree: 2048, q_bits: [55, 40, 40, 40], p_bits: [55], scale_bits: 40, allow_insecure: true}
inputs:
  x: {random: {range: [-1, 1], length: 16, seed: 1}}
  y: {random: {range: [-1, 1], length: 16, seed: 2}}
  p: {random: {range: [-1, 1], length: 16, seed: 3}, encrypted: false}
steps:
  - {name: m, op: multiply_relinearize_rescale, args: [x, y]}
  - {name: r, op: rotate, args: [m], step: 3}
  - {name: h, op: rotate_hoisted, args: [x], steps: [1, 2, 5]}
  - {name: mp, op: multiply_plain, args: [h_2, p]}
  - {name: c, op: conjugate, args: [y]}
execution: {mode: program, repetitions: 5, warmup: 1, seed: 9}
outputs:
  values: [{value: r, max_error: 1.0e-6}, {value: mp, max_error: 1.0e-6}, {value: c, max_error: 1.0e-6}, x]
)";

PipelineReport run_on(const std::vector<int>& devices, const std::vector<std::string>& overrides = {}) {
  RunOptions options;
  options.backend_factory = [](const BackendSpec&) { return cpu::make_cpu_backend({1}); };
  options.write_files = false;
  options.devices = devices;
  return run_pipeline(parse_pipeline(kPipeline, "devices.yaml", overrides), options);
}

void expect_same_outputs(const PipelineReport& one, const PipelineReport& several) {
  ASSERT_EQ(one.outputs.size(), several.outputs.size());
  for (std::size_t k = 0; k < one.outputs.size(); ++k) {
    EXPECT_EQ(one.outputs[k].digests.size(), 5u) << one.outputs[k].name;
    EXPECT_EQ(one.outputs[k].digests, several.outputs[k].digests) << one.outputs[k].name;
    EXPECT_EQ(one.outputs[k].error.max, several.outputs[k].error.max) << one.outputs[k].name;
  }
  // Fresh encryptions: the repetitions differ from each other.
  EXPECT_NE(one.outputs[0].digests[0], one.outputs[0].digests[1]);
}

TEST(PipelineDevices, ProgramModeOnThreeDevicesGivesTheOneDeviceResidues) {
  const PipelineReport one = run_on({});
  const PipelineReport three = run_on({0, 1, 1});  // a device named twice: two ranks on it
  EXPECT_TRUE(one.ok);
  EXPECT_TRUE(three.ok) << (three.failures.empty() ? "" : three.failures[0]);
  expect_same_outputs(one, three);
  EXPECT_FALSE(one.data_parallel);
  ASSERT_TRUE(three.data_parallel);
  EXPECT_EQ(three.data_parallel->devices, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(three.data_parallel->repetitions, (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(three.data_parallel->transport, "device collectives");  // the cpu backends' memory copies
  EXPECT_GT(three.data_parallel->bytes_moved, 0u);                  // the keys, to ranks 1 and 2
  EXPECT_GT(three.data_parallel->repetitions_per_second, 0.0);
  EXPECT_EQ(three.total_ms.size(), 5u);
  EXPECT_NE(three.to_json().find("\"repetitions_per_second\""), std::string::npos);
}

TEST(PipelineDevices, GraphModeCapturesOnEveryDeviceAndGivesTheOneDeviceResidues) {
  const PipelineReport one = run_on({}, {"execution.mode=graph"});
  const PipelineReport two = run_on({3, 1}, {"execution.mode=graph"});
  EXPECT_TRUE(two.ok);
  expect_same_outputs(one, two);
  EXPECT_EQ(two.data_parallel->repetitions, (std::vector<int>{3, 2}));
}

// The sparse-secret encapsulation keys (and their low context) reach rank 1 too.
TEST(PipelineDevices, BootstrapOnTwoDevicesGivesTheOneDeviceResidues) {
  const std::string bootstrap =
      "params: {ring_degree: 4096, q_bits: [60, 40, 40, 40, 40, 40, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, "
      "60], p_bits: [60, 60, 60, 60], scale_bits: 40, allow_insecure: true}\n"
      "inputs:\n"
      "  x: {random: {distribution: uniform, range: [-1, 1], length: 2048, seed: 3}}\n"
      "steps:\n"
      "  - {name: y, op: bootstrap, args: [x]}\n"
      "execution: {mode: program, repetitions: 2, seed: 4}\n"
      "outputs:\n"
      "  values: [{value: y, max_error: 1.0e-5}]\n";
  RunOptions options;
  options.backend_factory = [](const BackendSpec&) { return cpu::make_cpu_backend({1}); };
  options.write_files = false;
  const PipelineReport one = run_pipeline(parse_pipeline(bootstrap, "bootstrap.yaml"), options);
  options.devices = {0, 1};
  const PipelineReport two = run_pipeline(parse_pipeline(bootstrap, "bootstrap.yaml"), options);
  EXPECT_TRUE(two.ok) << (two.failures.empty() ? "" : two.failures[0]);
  ASSERT_EQ(two.outputs[0].digests.size(), 2u);
  EXPECT_EQ(one.outputs[0].digests, two.outputs[0].digests);
  EXPECT_EQ(two.data_parallel->repetitions, (std::vector<int>{1, 1}));
}

TEST(PipelineDevices, EagerModeAndANegativeDeviceAreRefusedBeforeAnyBackendExists) {
  int backends = 0;
  RunOptions options;
  options.backend_factory = [&](const BackendSpec&) {
    ++backends;
    return cpu::make_cpu_backend({1});
  };
  options.devices = {0, 1};
  try {
    run_pipeline(parse_pipeline(kPipeline, "devices.yaml", {"execution.mode=eager"}), options);
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("mode eager times each step on one device"), std::string::npos) << e.what();
  }
  options.devices = {0, -1};
  try {
    run_pipeline(parse_pipeline(kPipeline, "devices.yaml"), options);
    FAIL() << "expected an InvalidArgumentError";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("device -1: expected an index >= 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(backends, 0);
}

TEST(PipelineDevices, ADeviceThatCannotBeOpenedIsNamed) {
  RunOptions options;
  options.backend_factory = [](const BackendSpec& b) -> std::shared_ptr<Backend> {
    if (b.device == 1) throw BackendError("cuda: device 1 does not exist (1 device present)");
    return cpu::make_cpu_backend({1});
  };
  options.devices = {0, 1};
  EXPECT_THROW(run_pipeline(parse_pipeline(kPipeline, "devices.yaml"), options), BackendError);
}

}  // namespace
}  // namespace fhelium::runtime
