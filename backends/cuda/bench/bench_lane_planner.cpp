// The capture planner's own cost (host only, no GPU): LanePlanner::add over
// the declared accesses of a matvec-shaped schedule, as the CUDA backend
// declares them during a capture (whole polynomials, keys, the key-switching
// workspace as a token; temporaries reuse their addresses). Prints JSON:
// median and minimum over the runs, per matrix size. Not a test.
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstddef>
#include <iostream>
#include <vector>

#include "fhelium/circuits/linear_transform.hpp"
#include "lane_planner.hpp"

namespace {

using fhelium::cuda::LanePlanner;
using fhelium::cuda::MemoryAccess;

constexpr std::uintptr_t ciphertext_bytes = 2u << 20;  // 2 x 8 limbs x 2^14 words
constexpr std::uintptr_t key_bytes = 19u << 20;
constexpr std::uintptr_t diagonal_bytes = 1u << 20;

// {"median_ms", "min_ms", "runs"} of durations in milliseconds.
boost::json::object summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {{"median_ms", median}, {"min_ms", ms.front()}, {"runs", n}};
}

MemoryAccess read(std::uintptr_t at, std::uintptr_t bytes) { return {at, at + bytes, false}; }
MemoryAccess write(std::uintptr_t at, std::uintptr_t bytes) { return {at, at + bytes, true}; }

// Plans y = A x by cyclic diagonals with n1 hoisted baby steps and n2 giant
// steps (circuits::LinearTransform's split of a dense matrix); returns the
// number of operations planned.
int plan_schedule(LanePlanner& planner, int n1, int n2) {
  const std::uintptr_t ct = ciphertext_bytes;
  const std::uintptr_t x = 1ull << 40;
  const std::uintptr_t keys = x + (1ull << 36);
  const std::uintptr_t diagonals = x + (1ull << 37);
  const std::uintptr_t work = x - 4096;  // the workspace token
  const auto baby = [&](int i) { return x + static_cast<std::uintptr_t>(i + 1) * ct; };
  const std::uintptr_t product = x + static_cast<std::uintptr_t>(n1 + 1) * ct;  // temporaries, reused
  const std::uintptr_t sum = product + ct;
  const std::uintptr_t rotated = sum + ct;
  const std::uintptr_t total = rotated + ct;
  for (int i = 1; i < n1; ++i) {
    const MemoryAccess a[] = {read(x, ct), write(baby(i), ct), read(keys + i * key_bytes, key_bytes), write(work, 1)};
    planner.add(a, true);
  }
  for (int g = 0; g < n2; ++g) {
    for (int i = 0; i < n1; ++i) {
      const std::uintptr_t in = i == 0 ? x : baby(i);
      const std::uintptr_t diagonal = diagonals + static_cast<std::uintptr_t>(g * n1 + i) * diagonal_bytes;
      const MemoryAccess p[] = {read(in, ct), read(diagonal, diagonal_bytes), write(i == 0 ? sum : product, ct)};
      planner.add(p);
      if (i == 0) continue;
      const MemoryAccess a[] = {read(sum, ct), read(product, ct), write(sum, ct)};
      planner.add(a);
    }
    const std::uintptr_t key = keys + static_cast<std::uintptr_t>(n1 + g) * key_bytes;
    const MemoryAccess r[] = {read(sum, ct), write(rotated, ct), read(key, key_bytes), write(work, 1)};
    if (g > 0) planner.add(r, true);
    const MemoryAccess a[] = {read(total, ct), read(g > 0 ? rotated : sum, ct), write(total, ct)};
    planner.add(a);
  }
  return planner.operations();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium capture planner benchmark (JSON on stdout, host only)"};
  std::vector<int> sizes{8, 64, 256};
  int runs = 50;
  app.add_option("--sizes", sizes, "Matrix sizes (powers of two up to 8192)")->delimiter(',');
  app.add_option("--runs", runs, "Timed plans per size")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  namespace json = boost::json;
  json::array results;
  for (const int size : sizes) {
    std::vector<long> dense(static_cast<std::size_t>(size));
    for (int k = 0; k < size; ++k) dense[static_cast<std::size_t>(k)] = k;
    const int baby = static_cast<int>(fhelium::circuits::best_baby_step(dense, static_cast<std::size_t>(size)));
    const int giant = (size + baby - 1) / baby;
    std::vector<double> ms;
    int operations = 0;
    for (int r = 0; r < runs; ++r) {
      LanePlanner planner(4, 2);  // CaptureLanes' lanes
      const auto start = std::chrono::steady_clock::now();
      operations = plan_schedule(planner, baby, giant);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    json::object result = summary(ms);
    result["size"] = size;
    result["baby_steps"] = baby;
    result["giant_steps"] = giant;
    result["operations"] = operations;
    result["median_us_per_operation"] = result["median_ms"].as_double() * 1000.0 / operations;
    results.push_back(std::move(result));
  }
  std::cout << json::serialize(json::object{{"benchmark", "fhelium-lane-planner"},
                                            {"lanes", 4},
                                            {"results", std::move(results)}})
            << "\n";
}
