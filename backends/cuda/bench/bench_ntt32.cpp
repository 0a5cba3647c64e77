// The NTT of a ciphertext in 32-bit words (DeviceNtt32) against the
// backend's 64-bit NTT of the 64-bit preset's ciphertext at the same N, in
// one process: CUDA events around each run after a warm-up, median and
// minimum, with the bytes each must move once and the time that implies at
// 4.3 TB/s. Prints JSON. Not a test.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <functional>
#include <iostream>
#include <random>
#include <vector>

#include "cuda_check.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "fhelium/params.hpp"
#include "fhelium/primes.hpp"
#include "ntt32.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

constexpr double bandwidth_bytes_per_second = 4.3e12;  // device-to-device copy on the H200

// {"median_us", "min_us", "runs"} of durations in microseconds.
json::object summary_us(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const std::size_t n = us.size();
  return {{"median_us", n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2])}, {"min_us", us.front()}, {"runs", n}};
}

// The summary of `op` timed between events on `stream`.
json::object time_us(int runs, int warmup, cudaStream_t stream, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  cudaEvent_t start, stop;
  cuda::check(cudaEventCreate(&start), "cudaEventCreate");
  cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    cuda::check(cudaEventRecord(start, stream), "cudaEventRecord");
    op();
    cuda::check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    us.push_back(ms * 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return summary_us(std::move(us));
}

json::object with_floor(json::object timing, double bytes) {
  timing["bytes"] = bytes;
  timing["floor_us"] = bytes / bandwidth_bytes_per_second * 1e6;
  return timing;
}

// 2 x limbs limbs of 30-bit primes, forward and inverse.
json::object ntt32(std::uint64_t n, int limbs, int runs, int warmup) {
  std::vector<NttTable32> tables;
  for (const auto q : generate_ntt_primes(std::vector<int>(static_cast<std::size_t>(limbs), 30), n)) {
    tables.emplace_back(n, static_cast<cuda::u32>(q));
  }
  const cuda::DeviceNtt32 device(tables);
  const std::size_t words = 2 * static_cast<std::size_t>(limbs) * n;
  std::vector<cuda::u32> host(words);
  std::mt19937_64 rng(1);
  for (std::size_t k = 0; k < words; ++k)
    host[k] = static_cast<cuda::u32>(rng() % tables[(k / n) % tables.size()].modulus());
  cuda::u32* data = nullptr;
  cuda::check(cudaMalloc(reinterpret_cast<void**>(&data), words * sizeof(cuda::u32)), "cudaMalloc");
  cuda::check(cudaMemcpy(data, host.data(), words * sizeof(cuda::u32), cudaMemcpyHostToDevice), "cudaMemcpy");
  const double bytes = 2.0 * static_cast<double>(words) * sizeof(cuda::u32);  // read and write once
  json::object out{{"words", "32-bit"}, {"limbs", limbs}, {"prime_bits", 30}};
  out["forward"] = with_floor(time_us(runs, warmup, nullptr, [&] { device.forward(data, 2 * limbs, nullptr); }), bytes);
  out["inverse"] = with_floor(time_us(runs, warmup, nullptr, [&] { device.inverse(data, 2 * limbs, nullptr); }), bytes);
  cudaFree(data);
  return out;
}

// The backend's NTT of a ciphertext at the preset's top level.
json::object ntt64(const std::string& preset_name, int runs, int warmup) {
  const auto context = Context::create(preset(preset_name));
  auto backend = cuda::make_cuda_backend();
  const auto prepared = backend->prepare(context);
  const int limbs = static_cast<int>(context->q().size());
  const std::size_t n = context->ring_degree();
  const std::size_t words = 2 * static_cast<std::size_t>(limbs) * n;
  std::vector<u64> host(words);
  std::mt19937_64 rng(1);
  for (std::size_t k = 0; k < words; ++k) host[k] = rng() % context->q()[(k / n) % limbs].value;
  auto in = backend->allocate(words * sizeof(u64));
  auto out = backend->allocate(words * sizeof(u64));
  backend->upload(*in, host.data(), words * sizeof(u64));
  const PolyArg a{in.get(), 2, limbs}, b{out.get(), 2, limbs};
  const double bytes = 2.0 * static_cast<double>(words) * sizeof(u64);
  backend->synchronize();
  // The backend's own stream: its timing events bracket the calls.
  const auto time_backend = [&](const std::function<void()>& op) {
    for (int i = 0; i < warmup; ++i) op();
    auto start = backend->create_timing_event(), stop = backend->create_timing_event();
    std::vector<double> us;
    for (int i = 0; i < runs; ++i) {
      backend->record_event(*start, nullptr);
      op();
      backend->record_event(*stop, nullptr);
      us.push_back(backend->elapsed_seconds(*start, *stop) * 1e6);
    }
    return with_floor(summary_us(std::move(us)), bytes);
  };
  json::object result{{"words", "64-bit"}, {"preset", preset_name}, {"limbs", limbs}};
  result["forward"] = time_backend([&] { backend->to_ntt(*prepared, b, a); });
  result["inverse"] = time_backend([&] { backend->to_coefficient(*prepared, a, b); });
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The 32-bit NTT of a ciphertext against the 64-bit one (JSON on stdout)"};
  int runs = 200;
  int warmup = 20;
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Untimed runs first")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    cudaDeviceProp p{};
    cuda::check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    json::array results;
    // The 32-bit limb counts of the presets: 12 at 2^14 (7 levels), 48 at 2^16 (34 levels).
    results.push_back({{"ring_degree", 1 << 14},
                       {"transforms", json::array{ntt32(1 << 14, 12, runs, warmup),
                                                  ntt64("slots8192_scale40_levels7", runs, warmup)}}});
    results.push_back({{"ring_degree", 1 << 16},
                       {"transforms", json::array{ntt32(1 << 16, 48, runs, warmup),
                                                  ntt64("slots32768_scale40_levels34", runs, warmup)}}});
    std::cout << json::serialize(json::object{{"benchmark", "fhelium-cuda-ntt32"},
                                              {"machine", {{"gpu", p.name}}},
                                              {"results", std::move(results)}})
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-cuda-ntt32: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
