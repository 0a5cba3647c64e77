// The CUDA backend through the conformance suite (tests/conformance/): every
// Engine operation and every Backend operation called directly, on poisoned
// outputs, bit for bit against the CPU reference, at the shapes whose kernels
// differ, and the transforms at every prime size and kernel shape. One test
// per parameter set and level (the sanitizers run them one at a time). Every
// test skips when no CUDA device is present (CI has none).
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "require_gpu.hpp"

namespace fhelium::test {
namespace {

using conformance::ConformanceOptions;

struct Case {
  std::string name;  // the test's name
  ConformanceOptions options;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
std::string case_name(const testing::TestParamInfo<Case>& info) { return info.param.name; }

ConformanceOptions base_options() {
  ConformanceOptions o;
  o.trials = 1;
  o.reference_threads = 0;  // the backend under test leaves the CPU cores to the reference
  return o;
}

// "N13_L3_K2_B44" or a preset, at one level.
Case at(const std::string& params, int level) {
  Case c{params + "_at" + std::to_string(level), base_options()};
  c.options.params = {params};
  c.options.levels = {level};
  return c;
}

// Forward and inverse transforms of random residues only (3 and 1 limbs).
Case transforms(const std::string& name, std::vector<int> log_n, std::vector<int> bits) {
  Case c{name, base_options()};
  c.options.operations = false;
  c.options.transform_log_n = std::move(log_n);
  c.options.transform_bits = std::move(bits);
  return c;
}

class CudaConformance : public testing::TestWithParam<Case> {};

TEST_P(CudaConformance, BitExactWithCpu) {
  REQUIRE_GPU();
  const auto results = conformance::run_conformance(cuda::make_cuda_backend(), GetParam().options);
  ASSERT_FALSE(results.empty());
  std::size_t failed = 0;
  for (const auto& r : results) {
    if (r.passed) continue;
    ++failed;
    ADD_FAILURE() << r.name << ": " << r.detail;
  }
  std::cout << "  " << results.size() - failed << " of " << results.size() << " cases passed\n";
}

// N = 2^12 .. 2^16 with 1, 2 and 4 special primes (digits of 1, 2, 4 primes,
// partial last digits), at the top, a middle and the lowest levels; the two
// presets the benchmarks use; all-44-bit primes (the double-precision NTT and
// basis conversions at the top of their range, P included).
INSTANTIATE_TEST_SUITE_P(Shapes, CudaConformance,
                         testing::Values(at("N12_L5_K2", 5), at("N12_L5_K2", 2), at("N12_L5_K2", 1), at("N13_L6_K4", 6),
                                         at("N13_L6_K4", 3), at("N13_L6_K4", 0), at("N14_L7_K1", 7), at("N14_L7_K1", 4),
                                         at("N14_L7_K1", 1), at("N15_L9_K2", 9), at("N15_L9_K2", 4), at("N15_L9_K2", 0),
                                         at("N16_L11_K4", 11), at("N16_L11_K4", 6), at("N16_L11_K4", 1),
                                         at("N13_L3_K2_B44", 3), at("N14_L4_K1_B44", 4),
                                         at("slots8192_scale40_levels7", 7), at("slots8192_scale40_levels7", 3),
                                         at("slots32768_scale40_levels34", 34), at("slots32768_scale40_levels34", 17),
                                         at("slots32768_scale40_levels34", 1)),
                         case_name);

// The 32-bit word family (levels of several primes, windows of the chain):
// small chains at 2^12 and 2^13 at every kind of level (no terminal prime,
// t0 only, both, and the lowest), and the _int32 presets at 2^14 to 2^16.
INSTANTIATE_TEST_SUITE_P(
    Int32, CudaConformance,
    testing::Values(at("N12_W32", 7), at("N12_W32", 6), at("N12_W32", 5), at("N12_W32", 4), at("N13_W32", 7),
                    at("N13_W32", 1), at("slots8192_scale40_levels7_int32", 7),
                    at("slots8192_scale40_levels7_int32", 5), at("slots16384_scale40_levels16_int32", 16),
                    at("slots32768_scale40_levels34_int32", 34), at("slots32768_scale40_levels34_int32", 33),
                    at("slots32768_scale40_levels34_int32", 32), at("slots32768_scale40_levels34_int32", 1)),
    case_name);

// The double-precision transforms at the edges of their range (primes of 30,
// 43 and 44 bits) and the integer ones just above it (45 bits), at the
// one-launch (2^14; 2^16 with at most 2 limbs) and two-kernel shapes; and the
// ring sizes whose kernel shapes the key-switching cases do not reach (one
// tile of 2^10 or 2^11 words; 32 columns of 2^12-word tiles; 2^17).
INSTANTIATE_TEST_SUITE_P(Transforms, CudaConformance,
                         testing::Values(transforms("EveryPrimeSizeAroundTheDoublePrecisionLimit", {12, 14, 16},
                                                    {30, 43, 44, 45}),
                                         transforms("RandomResiduesAtEveryKernelShape", {10, 11, 12, 17}, {})),
                         case_name);

}  // namespace
}  // namespace fhelium::test
