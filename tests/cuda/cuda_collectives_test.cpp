// Several cuda backends in a DeviceGroup (docs/multi-device.md): two ranks
// on one GPU stay on host staging (NCCL needs one GPU per rank) and still
// move values bit for bit; one rank joins NCCL when libnccl.so.2 loads; on
// two GPUs the collectives go through NCCL, a buffer of the other device is
// refused by name, and a data-parallel pipeline gives the one-GPU residues.
// Each test skips without the GPUs (or NCCL) it needs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "fhelium/cuda/cuda_backend.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "fhelium/runtime/pipeline.hpp"
#include "helpers.hpp"
#include "nccl_communicator.hpp"
#include "require_gpu.hpp"

namespace fhelium::test {
namespace {

using runtime::Communicator;
using runtime::DeviceGroup;

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

#define REQUIRE_GPUS(n)                                                                                       \
  do {                                                                                                        \
    if (gpu_count() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA devices, " << gpu_count() << " present"; \
  } while (0)

// Rank 0's engine is the fixture's (device devices[0]); the others on their device.
struct Ranks {
  Ranks(const std::vector<int>& devices) : fx(small_params(12, 3), 1, 0, cuda::make_cuda_backend({devices[0]})) {
    engines.push_back(&fx.engine);
    for (std::size_t r = 1; r < devices.size(); ++r) {
      owned.push_back(std::make_unique<Engine>(fx.context, cuda::make_cuda_backend({devices[r]})));
      engines.push_back(owned.back().get());
    }
  }
  Fixture fx;
  std::vector<std::unique_ptr<Engine>> owned;
  std::vector<const Engine*> engines;
};

// Every rank gets the root's ciphertext and keys, and rotates with them to
// the root's residues; the sum over ranks equals one engine's.
void expect_collectives_bit_exact(Ranks& g, bool expect_connected, const std::string& expect_reason) {
  const int ranks = static_cast<int>(g.engines.size());
  const Ciphertext a = g.fx.encrypt(g.fx.random_message(1.0));
  const GaloisKeys keys = g.fx.galois_keys({1, 5});
  const std::vector<u64> rotated = g.fx.engine.download(g.fx.engine.rotate(a, 5, keys)).data;
  std::vector<Ciphertext> copies(static_cast<std::size_t>(ranks), a);
  const std::vector<u64> sum = g.fx.engine.download(g.fx.engine.sum(copies)).data;
  std::vector<std::vector<u64>> got_rotated(static_cast<std::size_t>(ranks)), got_sum(static_cast<std::size_t>(ranks));
  DeviceGroup(ranks).run([&](Communicator& c) {
    const auto r = static_cast<std::size_t>(c.rank());
    const Engine& e = *g.engines[r];
    EXPECT_EQ(c.connect(e), expect_connected) << c.not_connected();
    if (!expect_reason.empty()) {
      EXPECT_NE(c.not_connected().find(expect_reason), std::string::npos) << c.not_connected();
    }
    const Ciphertext x = c.broadcast(e, r == 0 ? &a : nullptr, 0);
    const GaloisKeys k = c.broadcast(e, r == 0 ? &keys : nullptr, 0);
    got_rotated[r] = e.download(e.rotate(x, 5, k)).data;
    got_sum[r] = e.download(c.all_reduce_sum(e, x)).data;
  });
  for (std::size_t r = 0; r < got_rotated.size(); ++r) {
    EXPECT_TRUE(got_rotated[r] == rotated) << "rank " << r;
    EXPECT_TRUE(got_sum[r] == sum) << "rank " << r;
  }
}

TEST(CudaCollectives, TwoRanksOnOneGpuStayOnHostStagingBitForBit) {
  REQUIRE_GPU();
  Ranks g({0, 0});
  const bool nccl = cuda::nccl_loads();
  expect_collectives_bit_exact(g, false, nccl ? "two ranks on device 0" : "has no device collectives");
}

TEST(CudaCollectives, OneRankJoinsNcclWhenItLoads) {
  REQUIRE_GPU();
  if (!cuda::nccl_loads()) GTEST_SKIP() << cuda::nccl_status();
  Ranks g({0});
  expect_collectives_bit_exact(g, true, "");
}

TEST(CudaCollectives, TwoGpusMoveValuesThroughNcclBitForBit) {
  REQUIRE_GPUS(2);
  if (!cuda::nccl_loads()) GTEST_SKIP() << cuda::nccl_status();
  Ranks g({0, 1});
  expect_collectives_bit_exact(g, true, "");
}

TEST(CudaCollectives, ABufferOfAnotherDeviceIsRefusedByName) {
  REQUIRE_GPUS(2);
  Ranks g({0, 1});
  const Ciphertext on_device_0 = g.fx.encrypt(g.fx.random_message(1.0));
  try {
    g.engines[1]->add(on_device_0, on_device_0);
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("the buffer is on device 0, this backend on device 1"), std::string::npos)
        << e.what();
  }
}

TEST(CudaCollectives, DataParallelPipelineOnTwoGpusGivesTheOneGpuResidues) {
  REQUIRE_GPUS(2);
  const std::string text = R"(
params: {ring_degree: 4096, q_bits: [55, 40, 40, 40], p_bits: [55], scale_bits: 40, allow_insecure: true}
inputs:
  x: {random: {range: [-1, 1], length: 16, seed: 1}}
  y: {random: {range: [-1, 1], length: 16, seed: 2}}
steps:
  - {name: m, op: multiply_relinearize_rescale, args: [x, y]}
  - {name: r, op: rotate, args: [m], step: 3}
execution: {mode: graph, repetitions: 6, seed: 9}
outputs:
  values: [{value: r, max_error: 1.0e-6}]
)";
  runtime::RunOptions options;
  options.backend_factory = [](const runtime::BackendSpec& b) { return cuda::make_cuda_backend({b.device}); };
  options.write_files = false;
  const auto one = runtime::run_pipeline(runtime::parse_pipeline(text, "two_gpus.yaml"), options);
  options.devices = {0, 1};
  const auto two = runtime::run_pipeline(runtime::parse_pipeline(text, "two_gpus.yaml"), options);
  EXPECT_TRUE(two.ok);
  EXPECT_EQ(one.outputs[0].digests, two.outputs[0].digests);
  ASSERT_TRUE(two.data_parallel);
  EXPECT_EQ(two.data_parallel->repetitions, (std::vector<int>{3, 3}));
  if (cuda::nccl_loads()) {
    EXPECT_EQ(two.data_parallel->transport, "device collectives");
  }
}

}  // namespace
}  // namespace fhelium::test
