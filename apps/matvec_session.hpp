// A square matvec (circuits::LinearTransform) set up on a backend: keys, the
// prepared and linked Program (encoded diagonals and rotation keys as static
// state), and fresh encryptions of cyclically packed vectors. Shared by the
// GraphProgram example and its benchmark.
#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/runtime/evaluation_keys.hpp"
#include "fhelium/runtime/graph_program.hpp"

namespace fhelium::apps {

class MatvecSession {
 public:
  MatvecSession(const CkksParameters& params, int size, std::shared_ptr<Backend> backend)
      : context_(Context::create(params)),
        keygen_(context_, rng_),
        sk_(keygen_.secret_key()),
        pk_(keygen_.public_key(sk_)),
        engine_(context_, std::move(backend)),
        encoder_(context_),
        encryptor_(context_, rng_),
        decryptor_(context_),
        size_(static_cast<std::size_t>(size)),
        transform_(circuits::LinearTransform::from_matrix(random_matrix(size_), slots())) {
    runtime::ProgramBuilder b(context_, "matvec");
    b.output("y", transform_.apply(b, b.input("x", top_level_state())));
    const runtime::PreparedProgram prepared = b.prepare();
    keys_.emplace(runtime::EvaluationKeys::generate(prepared.required_keys(), engine_, keygen_, sk_, rng_));
    runtime::Materials materials = keys_->materials();
    for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
    executable_.emplace(runtime::link(prepared, engine_, materials));
  }

  std::size_t slots() const { return context_->ring_degree() / 2; }
  const Context& context() const { return *context_; }
  const Engine& engine() const { return engine_; }
  Backend& backend() const { return engine_.backend(); }
  std::size_t size() const { return size_; }
  const circuits::LinearTransform& transform() const { return transform_; }
  const runtime::Executable& executable() const { return *executable_; }
  // The uncaptured evaluator as a GraphProgram schedule.
  runtime::Schedule schedule() const {
    return [exe = &*executable_](const runtime::ValueTree& in) { return exe->run(in); };
  }

  std::vector<double> random_vector() {
    std::uniform_real_distribution<double> entry(-1.0, 1.0);
    std::vector<double> x(size_);
    for (auto& v : x) v = entry(values_);
    return x;
  }
  // A fresh encryption (new randomness) of x, packed cyclically, at the top level.
  runtime::ValueTree encrypt(const std::vector<double>& x) {
    const auto plain = encoder_.encode(pack(x), context_->max_level(), context_->params().scale);
    return runtime::ValueTree(runtime::ValueTree::Map{{"x", engine_.upload_ciphertext(encryptor_.encrypt(plain, pk_))}});
  }
  // Largest slot error of y against A x (every repetition of the packing).
  double error(const Ciphertext& y, const std::vector<double>& x) const {
    const auto expected = transform_.apply_clear(pack(x));
    const auto slots_out = encoder_.decode(decryptor_.decrypt(engine_.download(y), sk_));
    double worst = 0;
    for (std::size_t j = 0; j < slots_out.size(); ++j) worst = std::max(worst, std::abs(slots_out[j] - expected[j]));
    return worst;
  }

 private:
  std::vector<std::vector<double>> random_matrix(std::size_t size) {
    std::uniform_real_distribution<double> entry(-1.0, 1.0);
    std::vector<std::vector<double>> m(size, std::vector<double>(size));
    for (auto& row : m) {
      for (auto& v : row) v = entry(values_);
    }
    return m;
  }
  runtime::Slots pack(const std::vector<double>& x) const { return transform_.pack(runtime::Slots(x.begin(), x.end())); }

  ValueState top_level_state() const {
    ValueState s;
    s.context_id = context_->id();
    s.word_size = context_->word_size();
    s.level = context_->max_level();
    s.scale = context_->params().scale;
    return s;
  }

  std::shared_ptr<const Context> context_;
  Csprng rng_;  // seeded by the OS
  KeyGenerator keygen_;
  SecretKey sk_;
  PublicKey pk_;
  Engine engine_;
  Encoder encoder_;
  Encryptor encryptor_;
  Decryptor decryptor_;
  std::mt19937_64 values_{2026};  // before transform_, which draws the matrix from it
  std::size_t size_;
  circuits::LinearTransform transform_;
  std::optional<runtime::EvaluationKeys> keys_;  // stays in place: the executable borrows them
  std::optional<runtime::Executable> executable_;
};

// Wall-clock seconds of `body` (which synchronizes before returning).
template <class Body>
double time_seconds(Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace fhelium::apps
