// The 32-bit NTT on the GPU against NttTable32 (core), bit for bit: forward
// and inverse on several limbs of different primes (below 2^30 and above),
// every ring degree the kernels support (2^10 to 2^17: tiles of 2^7 to 2^14
// words), limbs left alone by a negative map entry.
#include "fhelium/backend/ntt32.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fhelium/primes.hpp"
#include "ntt32.hpp"
#include "require_gpu.hpp"

namespace fhelium::test {
namespace {

class CudaNtt32 : public testing::TestWithParam<int> {};

// A device copy of a host vector, freed on every way out of a test (an
// ASSERT's early return included); CUDA failures throw, which gtest reports.
template <class T>
class DeviceCopy {
 public:
  explicit DeviceCopy(const std::vector<T>& host) : size_(host.size()) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), size_ * sizeof(T)), "cudaMalloc");
    const cudaError_t copied = cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice);
    if (copied != cudaSuccess) cudaFree(data_);  // no destructor runs for a throwing constructor
    check(copied, "cudaMemcpy to the device");
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() { cudaFree(data_); }

  T* get() const { return data_; }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    check(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return host;
  }

 private:
  static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
  T* data_ = nullptr;
  std::size_t size_;
};

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
    std::optional<DeviceCopy<int>> device_map;
    if (mapped) device_map.emplace(map);
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

    const DeviceCopy<u32> data(host);
    const int* limb_primes = device_map ? device_map->get() : nullptr;
    device.forward(data.get(), limbs, nullptr, limb_primes, 3);
    EXPECT_TRUE(data.download() == expected) << "forward";
    device.inverse(data.get(), limbs, nullptr, limb_primes, 3);
    EXPECT_TRUE(data.download() == host) << "inverse";
  }
}

// Two components of three limbs (limb i in prime i): out_c limb i = (X - y)
// w_i + add_c(X^g_c), X = x_c limb source_i (times A_i when scaled, 0 for a
// negative source), y the transform of limb i; once scaled with no add, once
// unscaled with an add read through X -> X^5 on component 0, once scaled with
// an add read at source_i times F_i (add_at_source).
TEST_P(CudaNtt32, ForwardCombinedIsTheTransformThenItsCombination) {
  REQUIRE_GPU();
  const int log_n = GetParam();
  const std::uint64_t n = std::uint64_t{1} << log_n;
  std::vector<NttTable32> tables;
  for (const auto q : generate_ntt_primes({31, 30, 29}, n)) tables.emplace_back(n, static_cast<u32>(q));
  const cuda::DeviceNtt32 device(tables);
  constexpr int limbs = 3, components = 2, x_limbs = 4;
  const std::vector<int> source{2, -1, 0};  // x_c limb source_i for limb i
  std::mt19937_64 rng(static_cast<unsigned>(log_n) + 100);
  const auto random_limbs = [&](int count) {  // every value below the least q
    std::vector<u32> v(n * static_cast<std::size_t>(components * count));
    for (std::size_t w = 0; w < v.size(); ++w) {
      v[w] = static_cast<u32>(rng() % tables[2].modulus());
    }
    return v;
  };
  const std::vector<u32> y_in = random_limbs(limbs), x = random_limbs(x_limbs), add = random_limbs(limbs);
  const std::vector<u32> add_by_source = random_limbs(x_limbs);
  const auto bitrev = [&](std::uint64_t i) {
    std::uint64_t r = 0;
    for (int b = 0; b < log_n; ++b) r |= ((i >> b) & 1) << (log_n - 1 - b);
    return r;
  };
  const auto galois_index = [&](std::uint64_t i, std::uint64_t g) {
    const std::uint64_t image = ((2 * bitrev(i) + 1) * g) % (2 * n);
    return bitrev((image - 1) / 2);
  };
  std::vector<u32> y = y_in;
  for (int b = 0; b < components * limbs; ++b) tables[static_cast<std::size_t>(b % limbs)].forward(y.data() + b * n);

  const DeviceCopy<u32> d_y(y_in), d_x(x), d_add(add), d_add_by_source(add_by_source),
      d_out(std::vector<u32>(n * components * limbs, 0));
  enum class Add { none, through_galois, at_source };
  for (const Add mode : {Add::none, Add::through_galois, Add::at_source}) {
    const bool scaled = mode != Add::through_galois;
    SCOPED_TRACE(mode == Add::none             ? "scaled X, no add"
                 : mode == Add::through_galois ? "X as it is, add through X -> X^5"
                                               : "scaled X, add at the source times F");
    cuda::ForwardCombine combine{};
    combine.limbs = limbs;
    std::vector<std::uint64_t> a(limbs), w(limbs), f(limbs);
    for (int i = 0; i < limbs; ++i) {
      const NttTable32& t = tables[static_cast<std::size_t>(i)];
      const std::uint64_t q = t.modulus();
      a[i] = rng() % q;
      w[i] = rng() % q;
      f[i] = rng() % q;
      combine.source[i] = source[static_cast<std::size_t>(i)];
      combine.x_factor.w[i] = static_cast<u32>(a[i]);
      combine.x_factor.w_shoup[i] = static_cast<u32>((a[i] << 32) / q);
      combine.w.w[i] = static_cast<u32>(w[i]);
      combine.w.w_shoup[i] = static_cast<u32>((w[i] << 32) / q);
      combine.add_factor.w[i] = static_cast<u32>(f[i]);
      combine.add_factor.w_shoup[i] = static_cast<u32>((f[i] << 32) / q);
    }
    combine.scale_x = scaled;
    combine.add_at_source = mode == Add::at_source;
    for (int c = 0; c < components; ++c) {
      combine.out[c] = d_out.get() + static_cast<std::size_t>(c * limbs) * n;
      combine.x[c] = d_x.get() + static_cast<std::size_t>(c * x_limbs) * n;
      combine.add[c] = mode == Add::none ? nullptr
                       : mode == Add::through_galois
                           ? d_add.get() + static_cast<std::size_t>(c * limbs) * n
                           : d_add_by_source.get() + static_cast<std::size_t>(c * x_limbs) * n;
      // at_source reads the add where it is: a Galois element there is ignored.
      combine.add_galois[c] = c == 0 && mode != Add::none ? 5 : 0;
    }
    device.forward_combined(d_y.get(), components * limbs, nullptr, nullptr, limbs, combine);
    const std::vector<u32> actual = d_out.download();
    std::vector<u32> expected(actual.size());
    for (int c = 0; c < components; ++c) {
      for (int i = 0; i < limbs; ++i) {
        const std::uint64_t q = tables[static_cast<std::size_t>(i)].modulus();
        const int src = source[static_cast<std::size_t>(i)];
        for (std::uint64_t k = 0; k < n; ++k) {
          std::uint64_t big_x = src < 0 ? 0 : x[(static_cast<std::size_t>(c * x_limbs + src)) * n + k] % q;
          if (scaled) big_x = big_x * a[i] % q;
          std::uint64_t r = (big_x + q - y[(static_cast<std::size_t>(c * limbs + i)) * n + k]) % q * w[i] % q;
          if (mode == Add::through_galois) {
            const std::uint64_t index = c == 0 ? galois_index(k, 5) : k;
            r = (r + add[(static_cast<std::size_t>(c * limbs + i)) * n + index]) % q;
          } else if (mode == Add::at_source && src >= 0) {
            r = (r + add_by_source[(static_cast<std::size_t>(c * x_limbs + src)) * n + k] % q * f[i]) % q;
          }
          expected[(static_cast<std::size_t>(c * limbs + i)) * n + k] = static_cast<u32>(r);
        }
      }
    }
    EXPECT_TRUE(actual == expected);
  }
  EXPECT_TRUE(d_y.download() == y_in) << "the input is left as it was";
}

std::string ring_name(const testing::TestParamInfo<int>& param) { return "N" + std::to_string(1 << param.param); }

INSTANTIATE_TEST_SUITE_P(RingSizes, CudaNtt32, testing::Values(10, 11, 12, 13, 14, 15, 16, 17), ring_name);

}  // namespace
}  // namespace fhelium::test
