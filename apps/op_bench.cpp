#include "op_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/params.hpp"

namespace fhelium::apps {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// Operations that run on the host, or whose cost is host copies: timed by
// the host clock with the backend synchronized. The others are timed by the
// backend's own timing events (CUDA events on the GPU), recorded before and
// after each run on the backend's stream.
bool host_timed(const std::string& op) {
  return op == "encode" || op == "encrypt" || op == "decrypt" || op == "upload" || op == "download";
}

json::object time_op(const std::string& name, int runs, int warmup, Backend& backend, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  backend.synchronize();
  const bool on_host = host_timed(name);
  const auto start_event = backend.create_timing_event();
  const auto end_event = backend.create_timing_event();
  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    const double cpu_start = process_cpu_ms();
    if (on_host) {
      op();
      backend.synchronize();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    } else {
      backend.record_event(*start_event, nullptr);
      op();
      backend.record_event(*end_event, nullptr);
      ms.push_back(backend.elapsed_seconds(*start_event, *end_event) * 1e3);
    }
    cpu_ms.push_back(process_cpu_ms() - cpu_start);
  }
  json::object result{{"op", name}, {"timer", on_host ? "host clock" : "backend events"}};
  for (const auto& field : timing_summary(std::move(ms))) result[field.key()] = field.value();
  // CPU time of all the process's threads: on a shared machine the wall time
  // also holds the time the scheduler gave to other processes.
  const json::object cpu = timing_summary(std::move(cpu_ms));
  result["process_cpu_median_ms"] = cpu.at("median_ms");
  result["process_cpu_min_ms"] = cpu.at("min_ms");
  return result;
}

}  // namespace

std::vector<std::string> bench_operations() {
  return {"encode",
          "encrypt",
          "decrypt",
          "upload",
          "download",
          "add",
          "add_scalar",
          "multiply_plain",
          "multiply_scalar",
          "multiply",
          "relinearize",
          "multiply_relinearize",
          "multiply_relinearize_rescale",
          "rescale",
          "rotate",
          "rotate_hoisted_8",
          "rotate_8_separately",
          "rotate_sum_8",
          "rotate_8_then_sum",
          "ntt_forward",
          "ntt_inverse",
          "multiply_plain_sum_8"};
}

void check_bench_operations(const std::vector<std::string>& ops) {
  const auto known = bench_operations();
  for (const auto& op : ops) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InvalidArgumentError("unknown operation '" + op + "' (known: " + list + ")");
    }
  }
}

json::object timing_summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {{"median_ms", median}, {"min_ms", ms.front()}, {"runs", n}};
}

json::object bench_preset(const std::string& preset_name, const std::shared_ptr<Backend>& backend,
                          const std::vector<std::string>& ops, int runs, int warmup) {
  check_bench_operations(ops);
  const auto context = Context::create(preset(preset_name));
  Engine engine(context, backend);
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  const RelinKey rk = engine.upload_relinearization_key(keygen.relinearization_key(sk));
  std::vector<HostSwitchKey> rotation_keys;
  const std::vector<long> hoisted_steps = {1, 2, 3, 4, 5, 6, 7, 8};
  for (long s : hoisted_steps) rotation_keys.push_back(keygen.galois_key(sk, context->galois_element(s)));
  const GaloisKeys gk = engine.upload_galois_keys(rotation_keys);
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
  // A giant group of a linear transform: 8 ciphertexts, each with its own diagonal.
  std::vector<Ciphertext> group_values;
  std::vector<Plaintext> group_diagonals;
  for (int i = 0; i < 8; ++i) {
    group_values.push_back(engine.add_scalar(a, 0.125 * i));
    std::vector<double> diagonal(m);
    std::rotate(diagonal.begin(), diagonal.begin() + i, diagonal.end());
    group_diagonals.push_back(engine.upload_plaintext(encoder.encode(diagonal, top, scale)));
  }

  // Encryption and decryption run on the host (as in SEAL); moving the
  // ciphertext to and from the backend is timed separately.
  const std::map<std::string, std::function<void()>> table = {
      {"encode", [&] { encoder.encode(m, top, scale); }},
      {"encrypt", [&] { encryptor.encrypt(pt_host, pk); }},
      {"decrypt", [&] { decryptor.decrypt(a_host, sk); }},
      {"upload", [&] { engine.upload_ciphertext(a_host); }},
      {"download", [&] { engine.download(a); }},
      {"add", [&] { engine.add(a, b); }},
      {"add_scalar", [&] { engine.add_scalar(a, 0.5); }},
      {"multiply_plain", [&] { engine.multiply_plain(a, pt); }},
      {"multiply_scalar", [&] { engine.multiply_scalar(a, 0.5, scale); }},
      {"multiply", [&] { engine.multiply(a, b); }},
      {"relinearize", [&] { engine.relinearize(a3, rk); }},
      {"multiply_relinearize", [&] { engine.multiply_relinearize(a, b, rk); }},
      {"multiply_relinearize_rescale", [&] { engine.multiply_relinearize_rescale(a, b, rk); }},
      {"rescale", [&] { engine.rescale(a); }},
      {"rotate", [&] { engine.rotate(a, 1, gk); }},
      {"rotate_hoisted_8", [&] { engine.rotate_hoisted(a, hoisted_steps, gk); }},
      {"rotate_8_separately",
       [&] {
         for (long s : hoisted_steps) engine.rotate(a, s, gk);
       }},
      // A linear transform's giant rotations: 8 ciphertexts rotated and summed,
      // with one ModDown (rotate_sum) or one per rotation.
      {"rotate_sum_8", [&] { engine.rotate_sum(group_values, hoisted_steps, gk); }},
      {"rotate_8_then_sum",
       [&] {
         std::vector<Ciphertext> rotated;
         for (std::size_t i = 0; i < group_values.size(); ++i) {
           rotated.push_back(engine.rotate(group_values[i], hoisted_steps[i], gk));
         }
         engine.sum(rotated);
       }},
      {"ntt_forward", [&] { engine.to_ntt(a_coeff); }},
      {"ntt_inverse", [&] { engine.to_coefficient(a); }},
      {"multiply_plain_sum_8", [&] { engine.multiply_plain_sum(group_values, group_diagonals); }},
  };
  json::array results;
  for (const auto& op : ops) {
    if (op == "rotate_sum_8" && !engine.backend().supports_rotate_sum()) {
      results.push_back(json::object{{"op", op}, {"skipped", "the backend has no rotate_sum"}});
      continue;
    }
    results.push_back(time_op(op, runs, warmup, engine.backend(), table.at(op)));
  }
  const auto& p = context->params();
  const std::size_t ciphertext_bytes = 2 * static_cast<std::size_t>(context->level_basis(context->max_level()).count) *
                                       context->ring_degree() * stored_word_bytes(context->word_size());
  return {{"preset", preset_name},
          {"parameters",
           {{"ring_degree", context->ring_degree()},
            {"q_bits", json::value_from(p.q_bits)},
            {"p_bits", json::value_from(p.p_bits)},
            {"log_scale", std::log2(p.scale)},
            {"log_qp", context->log_qp()},
            {"key_digits", context->key_digits()},
            {"level", top},
            {"ciphertext_bytes", ciphertext_bytes}}},
          {"results", std::move(results)}};
}

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace fhelium::apps
