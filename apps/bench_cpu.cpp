// Times each Engine operation on the CPU backend and prints JSON
// (median, min, runs, parameters, threads, machine). Not a test.
#include <CLI/CLI.hpp>
#include <omp.h>
#include <sys/utsname.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

json::object machine(int threads) {
  utsname u{};
  uname(&u);
  return {{"cpu", cpu_model()},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"threads", threads},
          {"kernel", std::string(u.release)},
          {"compiler", __VERSION__}};
}

json::object time_op(const std::string& name, int runs, int warmup, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = runs % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return {{"op", name}, {"median_ms", median}, {"min_ms", ms.front()}, {"runs", runs}};
}

json::object bench_preset(const std::string& name, int threads, int runs, const std::vector<std::string>& ops) {
  const auto context = Context::create(preset(name));
  Engine engine(context, cpu::make_cpu_backend({threads}));
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  const RelinKey rk = engine.upload_relinearization_key(keygen.relinearization_key(sk));
  const HostSwitchKey rot = keygen.galois_key(sk, context->galois_element(1));
  const GaloisKeys gk = engine.upload_galois_keys(std::span(&rot, 1));
  Encoder encoder(context);
  Encryptor encryptor(context, rng);
  Decryptor decryptor(context);

  const std::size_t slots = context->ring_degree() / 2;
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> m(slots);
  for (auto& v : m) v = dist(gen);
  const int top = context->max_level();
  const double scale = context->params().scale;
  const HostValue pt_host = encoder.encode(m, top, scale);
  const Plaintext pt = engine.upload_plaintext(pt_host);
  const Ciphertext a = engine.upload_ciphertext(encryptor.encrypt(pt_host, pk));
  const Ciphertext b = engine.upload_ciphertext(encryptor.encrypt(pt_host, pk));
  const Ciphertext a3 = engine.multiply(a, b);
  const Ciphertext a_coeff = engine.to_coefficient(a);
  const HostValue a_host = engine.download(a);

  const std::map<std::string, std::function<void()>> table = {
      // Encryption and decryption run on the host (as in SEAL); moving the
      // ciphertext to and from the backend is timed separately.
      {"encrypt", [&] { encryptor.encrypt(pt_host, pk); }},
      {"decrypt", [&] { decryptor.decrypt(a_host, sk); }},
      {"upload", [&] { engine.upload_ciphertext(a_host); }},
      {"download", [&] { engine.download(a); }},
      {"add", [&] { engine.add(a, b); }},
      {"multiply_plain", [&] { engine.multiply_plain(a, pt); }},
      {"multiply", [&] { engine.multiply(a, b); }},
      {"relinearize", [&] { engine.relinearize(a3, rk); }},
      {"multiply_relinearize", [&] { engine.relinearize(engine.multiply(a, b), rk); }},
      {"rescale", [&] { engine.rescale(a); }},
      {"rotate", [&] { engine.rotate(a, 1, gk); }},
      {"ntt_forward", [&] { engine.to_ntt(a_coeff); }},
      {"ntt_inverse", [&] { engine.to_coefficient(a); }},
  };
  json::array results;
  for (const auto& op : ops) {
    const auto it = table.find(op);
    if (it == table.end()) throw InvalidArgumentError("unknown operation '" + op + "'");
    results.push_back(time_op(op, runs, 2, it->second));
  }
  const auto& p = context->params();
  return {{"preset", name},
          {"parameters",
           {{"ring_degree", context->ring_degree()},
            {"q_bits", json::value_from(p.q_bits)},
            {"p_bits", json::value_from(p.p_bits)},
            {"log_scale", std::log2(p.scale)},
            {"log_qp", context->log_qp()},
            {"key_digits", context->key_digits()},
            {"level", top}}},
          {"results", std::move(results)}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium CPU operation benchmark (JSON on stdout)"};
  std::vector<std::string> presets = {"slots8192_scale40_levels7"};
  std::vector<std::string> ops = {"encrypt",  "decrypt", "add",         "multiply_plain", "multiply",
                                  "relinearize", "rescale", "rotate", "ntt_forward", "ntt_inverse"};
  int threads = 1;
  int runs = 20;
  app.add_option("--preset", presets, "Presets to measure")->expected(1, -1);
  app.add_option("--ops", ops, "Operations to measure")->expected(1, -1);
  app.add_option("--threads", threads, "CPU threads for the backend");
  app.add_option("--runs", runs, "Timed runs per operation (after 2 warm-up runs)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    json::array out;
    for (const auto& p : presets) out.push_back(bench_preset(p, threads, runs, ops));
    std::cout << json::serialize(json::object{{"benchmark", "fhelium-cpu-ops"},
                                              {"machine", machine(threads)},
                                              {"presets", std::move(out)}})
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-cpu: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
