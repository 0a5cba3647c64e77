#include "bench_command.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>

#include "backend_choice.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/pipeline.hpp"

namespace fhelium::apps {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// Each run is synchronized, so asynchronous backends are timed to completion.
json::object time_op(const std::string& name, int runs, int warmup, Backend& backend, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  backend.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    op();
    backend.synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {{"op", name}, {"median_ms", median}, {"min_ms", ms.front()}, {"runs", runs}};
}

json::object bench_preset(const std::string& name, const BenchOptions& options,
                          const std::shared_ptr<Backend>& backend) {
  const auto context = Context::create(preset(name));
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
      {"multiply_relinearize", [&] { engine.relinearize(engine.multiply(a, b), rk); }},
      {"rescale", [&] { engine.rescale(a); }},
      {"rotate", [&] { engine.rotate(a, 1, gk); }},
      {"rotate_hoisted_8", [&] { engine.rotate_hoisted(a, hoisted_steps, gk); }},
      {"rotate_8_separately",
       [&] {
         for (long s : hoisted_steps) engine.rotate(a, s, gk);
       }},
      {"ntt_forward", [&] { engine.to_ntt(a_coeff); }},
      {"ntt_inverse", [&] { engine.to_coefficient(a); }},
  };
  std::vector<std::string> ops = options.ops.empty() ? bench_operations() : options.ops;
  json::array results;
  for (const auto& op : ops) {
    const auto it = table.find(op);
    if (it == table.end()) {
      std::string known;
      for (const auto& k : bench_operations()) known += (known.empty() ? "" : ", ") + k;
      throw InvalidArgumentError("unknown operation '" + op + "' (known: " + known + ")");
    }
    results.push_back(time_op(op, options.runs, options.warmup, engine.backend(), it->second));
  }
  const auto& p = context->params();
  const std::size_t ciphertext_bytes = 2 * (context->q().size()) * context->ring_degree() * sizeof(u64);
  return {{"preset", name},
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

}  // namespace

std::vector<std::string> bench_operations() {
  return {"encode",          "encrypt",    "decrypt",          "upload",
          "download",        "add",        "add_scalar",       "multiply_plain",
          "multiply_scalar", "multiply",   "relinearize",      "multiply_relinearize",
          "rescale",         "rotate",     "rotate_hoisted_8", "rotate_8_separately",
          "ntt_forward",     "ntt_inverse"};
}

int run_bench_command(const BenchOptions& options) {
  ChosenBackend chosen = choose_backend(options.backend, options.device);
  if (!chosen.note.empty()) std::cerr << chosen.note << "\n";
  for (const auto& op : options.ops) {
    const auto known = bench_operations();
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InvalidArgumentError("unknown operation '" + op + "' (known: " + list + ")");
    }
  }
  json::array presets;
  for (const auto& p : options.presets) presets.push_back(bench_preset(p, options, chosen.backend));
  utsname u{};
  uname(&u);
  const json::object doc{{"benchmark", "fhelium-ops"},
                         {"backend", json::object{{"name", chosen.backend->name()},
                                                  {"device", options.device},
                                                  {"devices", json::value_from(chosen.devices)}}},
                         {"machine", json::object{{"kernel", std::string(u.release)}, {"compiler", __VERSION__}}},
                         {"runs", options.runs},
                         {"warmup", options.warmup},
                         {"presets", std::move(presets)}};
  const std::string text = runtime::pretty_json(json::serialize(doc));
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
  } else {
    std::ofstream out(options.output);
    out << text;
    if (!out) throw Error("cannot write '" + options.output + "'");
  }
  return 0;
}

}  // namespace fhelium::apps
