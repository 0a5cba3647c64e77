// The 32-bit NTT on the GPU against NttTable32 (core), bit for bit: forward
// and inverse on several limbs of different primes (below 2^30 and above),
// every ring degree the kernels support (2^10 to 2^17: tiles of 2^7 to 2^14
// words), limbs left alone by a negative map entry.
#include "fhelium/backend/ntt32.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fhelium/primes.hpp"
#include "ntt32.hpp"
#include "require_gpu.hpp"

namespace fhelium::test {
namespace {

class CudaNtt32 : public testing::TestWithParam<int> {};

// Limbs by index (b % 3) and through a device map of prime indices; one
// prime of 31 bits (every value kept below q) and two below 2^30 (lazy).
TEST_P(CudaNtt32, BitExactWithTheCpuTransform) {
  REQUIRE_GPU();
  const std::uint64_t n = std::uint64_t{1} << GetParam();
  std::vector<NttTable32> tables;
  for (const auto q : generate_ntt_primes({31, 30, 29}, n)) tables.emplace_back(n, static_cast<u32>(q));
  ASSERT_GE(tables[0].modulus(), u32{1} << 30);
  constexpr int limbs = 6;  // two polynomials of three limbs
  // Limb b in prime b % 3, through a map, and through a map whose -1 leaves
  // limbs b = 1 (mod 3) as they are.
  const std::vector<std::vector<int>> maps{{}, {2, 0, 1}, {2, -1, 1}};
  const cuda::DeviceNtt32 device(tables);
  for (const std::vector<int>& map : maps) {
    const bool mapped = !map.empty();
    SCOPED_TRACE(mapped ? "map {" + std::to_string(map[0]) + ", " + std::to_string(map[1]) + ", " +
                              std::to_string(map[2]) + "}"
                        : "limb b in prime b % 3");
    int* device_map = nullptr;
    if (mapped) {
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device_map), map.size() * sizeof(int)), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(device_map, map.data(), map.size() * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
    }
    const auto prime = [&](int b) { return mapped ? map[static_cast<std::size_t>(b % 3)] : b % 3; };
    const auto table = [&](int b) -> const NttTable32& {
      return tables[static_cast<std::size_t>(prime(b) < 0 ? 0 : prime(b))];
    };
    std::vector<u32> host(n * limbs);
    std::mt19937_64 rng(static_cast<unsigned>(GetParam()));
    for (int b = 0; b < limbs; ++b) {
      const u32 q = table(b).modulus();
      for (std::uint64_t k = 0; k < n; ++k) {
        host[b * n + k] = k < 64 ? q - 1 - static_cast<u32>(k % 2) : static_cast<u32>(rng() % q);
      }
    }
    std::vector<u32> expected = host;
    for (int b = 0; b < limbs; ++b) {
      if (prime(b) >= 0) table(b).forward(expected.data() + b * n);
    }

    u32* data = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), host.size() * sizeof(u32)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(data, host.data(), host.size() * sizeof(u32), cudaMemcpyHostToDevice), cudaSuccess);
    const int* limb_primes = device_map;
    device.forward(data, limbs, nullptr, limb_primes, 3);
    std::vector<u32> actual(host.size());
    ASSERT_EQ(cudaMemcpy(actual.data(), data, actual.size() * sizeof(u32), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(actual == expected) << "forward";
    device.inverse(data, limbs, nullptr, limb_primes, 3);
    ASSERT_EQ(cudaMemcpy(actual.data(), data, actual.size() * sizeof(u32), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(actual == host) << "inverse";
    cudaFree(data);
    cudaFree(device_map);
  }
}

std::string ring_name(const testing::TestParamInfo<int>& param) { return "N" + std::to_string(1 << param.param); }

INSTANTIATE_TEST_SUITE_P(RingSizes, CudaNtt32, testing::Values(10, 11, 12, 13, 14, 15, 16, 17), ring_name);

}  // namespace
}  // namespace fhelium::test
