// Shared set-up for the core and CPU tests: a context, keys, an engine on the
// CPU backend, and clear-message helpers.
#pragma once

#include <complex>
#include <memory>
#include <random>
#include <vector>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"

namespace fhelium::test {

using Message = std::vector<std::complex<double>>;

// Small insecure parameters for fast unit tests (explicit opt-out).
inline CkksParameters small_params(int log_n, int levels, int specials = 1) {
  CkksParameters p;
  p.log_ring_degree = log_n;
  p.q_bits.push_back(55);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(levels), 40);
  p.p_bits.assign(static_cast<std::size_t>(specials), 55);
  p.scale = std::ldexp(1.0, 40);
  p.allow_insecure = true;
  return p;
}

// A small rational chain of the 32-bit word family (params.hpp): 10 mains,
// levels 0..7 of every kind; insecure, for fast tests.
inline CkksParameters small_int32_params(int log_n) {
  CkksParameters p;
  p.log_ring_degree = log_n;
  p.word_size = WordSize::bits32;
  p.q_bits = {20, 20};
  p.q_bits.insert(p.q_bits.end(), 10, 30);
  p.p_bits = {31, 31};
  p.scale = std::ldexp(1.0, 40);
  p.allow_insecure = true;
  return p;
}

inline Seed test_seed(std::uint8_t tag) {
  Seed s{};
  s.fill(tag);
  return s;
}

struct Fixture {
  std::shared_ptr<const Context> context;
  Csprng rng;
  KeyGenerator keygen;
  SecretKey sk;
  PublicKey pk;
  Engine engine;
  Encoder encoder;
  Encryptor encryptor;
  Decryptor decryptor;
  std::mt19937_64 message_rng{12345};

  // `backend`: the engine's backend (default: the CPU backend with `threads`).
  explicit Fixture(const CkksParameters& params, std::uint8_t seed_tag = 1, int threads = 0,
                   std::shared_ptr<Backend> backend = nullptr)
      : context(Context::create(params)),
        rng(test_seed(seed_tag)),
        keygen(context, rng),
        sk(keygen.secret_key()),
        pk(keygen.public_key(sk)),
        engine(context, backend ? std::move(backend) : cpu::make_cpu_backend({threads})),
        encoder(context),
        encryptor(context, rng),
        decryptor(context) {}

  std::size_t slots() const { return context->ring_degree() / 2; }
  double scale() const { return context->params().scale; }

  Message random_message(double amplitude, std::size_t count = 0) {
    std::uniform_real_distribution<double> d(-amplitude, amplitude);
    Message m(count == 0 ? slots() : count);
    for (auto& x : m) x = {d(message_rng), d(message_rng)};
    return m;
  }

  // Real parts uniform in [-amplitude, amplitude], imaginary parts zero.
  Message random_real_message(double amplitude) {
    std::uniform_real_distribution<double> d(-amplitude, amplitude);
    Message m(slots());
    for (auto& x : m) x = {d(message_rng), 0.0};
    return m;
  }

  Ciphertext encrypt(const Message& m, int level = -1, double scale = 0) {
    const int l = level < 0 ? context->max_level() : level;
    const double s = scale == 0 ? this->scale() : scale;
    return engine.upload_ciphertext(encryptor.encrypt(encoder.encode(m, l, s), pk));
  }

  Plaintext plaintext(const Message& m, int level, double scale) {
    return engine.upload_plaintext(encoder.encode(m, level, scale));
  }

  Message decrypt(const Ciphertext& ct, std::size_t slot_count = 0) {
    const auto pt = decryptor.decrypt(engine.download(ct), sk);
    return encoder.decode(pt, slot_count == 0 ? slots() : slot_count);
  }

  RelinKey relin_key() { return engine.upload_relinearization_key(keygen.relinearization_key(sk)); }

  GaloisKeys galois_keys(const std::vector<long>& steps, bool conjugation = false) {
    std::vector<HostSwitchKey> keys;
    for (long s : steps) keys.push_back(keygen.galois_key(sk, context->galois_element(s)));
    if (conjugation) keys.push_back(keygen.galois_key(sk, context->conjugation_element()));
    return engine.upload_galois_keys(keys);
  }
};

// A rows x cols matrix of entries uniform in [-1, 1].
inline std::vector<std::vector<double>> random_matrix(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<std::vector<double>> m(rows, std::vector<double>(cols));
  for (auto& row : m) {
    for (auto& v : row) v = d(rng);
  }
  return m;
}

inline double max_error(const Message& expected, const Message& actual) {
  double e = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) e = std::max(e, std::abs(expected[i] - actual[i]));
  return e;
}

// Largest difference of the real parts: what a user who encodes real numbers
// reads back (SEAL's decode into doubles drops the imaginary parts).
inline double max_real_error(const Message& expected, const Message& actual) {
  double e = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) e = std::max(e, std::abs(expected[i].real() - actual[i].real()));
  return e;
}

inline Message rotate_left(const Message& m, long step) {
  const auto n = static_cast<long>(m.size());
  Message out(m.size());
  for (long i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = m[static_cast<std::size_t>(((i + step) % n + n) % n)];
  return out;
}

}  // namespace fhelium::test
