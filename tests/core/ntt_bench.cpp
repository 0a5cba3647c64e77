// The NTT in 32-bit words against the 64-bit transforms on one thread: a
// ciphertext's worth of limbs (2 x limbs x N), forward then inverse, for a
// 30-bit prime in 32-bit words, the same prime in 64-bit words (the
// double-precision path) and a 55-bit prime (the integer path). Prints one
// JSON object (median and minimum per transform). Not a test.
//
//   fhelium_ntt_bench [--runs R] [--limbs L]
#include <sys/utsname.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "fhelium/backend/ntt.hpp"
#include "fhelium/backend/ntt32.hpp"
#include "fhelium/primes.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

json::object time_runs(int runs, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return {{"median_ms", n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2])}, {"min_ms", ms.front()}, {"runs", n}};
}

template <class Table, class Word>
json::object measure(const Table& table, Word q, std::uint64_t n, int polys, int runs, const std::string& word) {
  std::mt19937_64 rng(1);
  std::vector<Word> data(n * static_cast<std::size_t>(polys));
  for (auto& x : data) x = static_cast<Word>(rng() % q);
  json::object out{{"words", word}, {"prime", q}, {"prime_bits", 64 - __builtin_clzll(q)}};
  out["forward"] = time_runs(runs, [&] {
    for (int p = 0; p < polys; ++p) table.forward(data.data() + static_cast<std::size_t>(p) * n);
  });
  out["inverse"] = time_runs(runs, [&] {
    for (int p = 0; p < polys; ++p) table.inverse(data.data() + static_cast<std::size_t>(p) * n);
  });
  return out;
}

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  int limbs = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--limbs") == 0) limbs = std::max(1, std::atoi(argv[i + 1]));
  }
  json::array results;
  for (int log_n : {14, 16}) {
    const std::uint64_t n = std::uint64_t{1} << log_n;
    const int polys = 2 * limbs;
    const auto q30 = generate_ntt_primes({30}, n).front();
    const auto q36 = generate_ntt_primes({36}, n).front();
    const auto q55 = generate_ntt_primes({55}, n).front();
    json::array rows;
    rows.push_back(measure(NttTable32(n, static_cast<u32>(q30)), static_cast<u32>(q30), n, polys, runs, "32-bit"));
    // 64-bit words: below 2^31 through the 32-bit transform (narrowed and
    // widened), below 2^44 in double precision, above in integers.
    rows.push_back(measure(NttTable(n, Modulus(q30)), q30, n, polys, runs, "64-bit"));
    rows.push_back(measure(NttTable(n, Modulus(q36)), q36, n, polys, runs, "64-bit"));
    rows.push_back(measure(NttTable(n, Modulus(q55)), q55, n, polys, runs, "64-bit"));
    results.push_back(json::object{{"ring_degree", n}, {"polynomials", polys}, {"transforms", std::move(rows)}});
  }
  utsname u{};
  uname(&u);
  std::cout << json::serialize(json::object{{"benchmark", "fhelium-ntt-words"},
                                            {"machine", {{"cpu", cpu_model()}, {"kernel", u.release}, {"threads", 1}}},
                                            {"limbs", limbs},
                                            {"results", std::move(results)}})
            << "\n";
  return 0;
}
