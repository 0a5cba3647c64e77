#include "fhelium/runtime/evaluation_keys.hpp"

#include <filesystem>
#include <fstream>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/runtime/key_folder.hpp"
#include "fhelium/serialization.hpp"

namespace fhelium::runtime {
namespace {

std::size_t host_bytes(const HostSwitchKey& key) { return key.data.size() * sizeof(u64); }

}  // namespace

SparseEncapsulation upload_sparse_encapsulation(const Engine& engine, const SparseEncapsulationKeys& keys) {
  if (keys.sparse_to_dense.context_id != engine.context().id() || !keys.low_context ||
      keys.low_context->q().front().value != engine.context().level_modulus(0, 0).value) {
    throw StateError("sparse-secret encapsulation: the keys were generated for another context (context " +
                     std::to_string(keys.sparse_to_dense.context_id) + "), expected context " +
                     std::to_string(engine.context().id()));
  }
  SparseEncapsulation out;
  auto low = std::make_shared<Engine>(keys.low_context, engine.backend_ptr());
  out.dense_to_sparse = low->upload_switching_key(keys.dense_to_sparse);
  out.sparse_to_dense = engine.upload_switching_key(keys.sparse_to_dense);
  out.low_engine = std::move(low);
  return out;
}

EvaluationKeys EvaluationKeys::generate(const KeyRequirements& needed, const Engine& engine, KeyGenerator& keygen,
                                        const SecretKey& secret, Csprng& rng, const Progress& progress) {
  const Context& context = engine.context();
  const std::set<std::uint32_t> elements = needed.galois_elements(context);
  const std::size_t total = elements.size() + (needed.relinearization ? 1 : 0) + (needed.sparse_encapsulation ? 1 : 0);
  std::size_t done = 0;
  const auto made = [&](const std::string& key) {
    if (progress) progress(++done, total, key);
  };
  EvaluationKeys keys;
  if (needed.relinearization) {
    const HostSwitchKey key = keygen.relinearization_key(secret);
    keys.bytes_ += host_bytes(key);
    keys.relinearization_ = engine.upload_relinearization_key(key);
    made("relinearization");
  }
  std::vector<HostSwitchKey> galois;
  for (std::uint32_t e : elements) {
    galois.push_back(keygen.galois_key(secret, e));
    keys.bytes_ += host_bytes(galois.back());
    made("galois element " + std::to_string(e));
  }
  keys.galois_ = engine.upload_galois_keys(galois);
  if (needed.sparse_encapsulation) {
    const auto encapsulation = SparseEncapsulationKeys::generate(engine.context_ptr(), secret, rng);
    keys.bytes_ += host_bytes(encapsulation.dense_to_sparse) + host_bytes(encapsulation.sparse_to_dense);
    keys.sparse_encapsulation_ = upload_sparse_encapsulation(engine, encapsulation);
    made("sparse-secret encapsulation");
  }
  return keys;
}

EvaluationKeys EvaluationKeys::load(const KeyRequirements& needed, const Engine& engine, const std::string& folder) {
  const Context& context = engine.context();
  const std::filesystem::path dir(folder);
  EvaluationKeys keys;
  if (needed.relinearization) {
    keys.relinearization_ = load_relinearization_key_file((dir / key_folder::relinearization_key).string(), engine);
    keys.bytes_ += context.key_words() * sizeof(u64);
  }
  const std::set<std::uint32_t> elements = needed.galois_elements(context);
  std::vector<HostSwitchKey> galois;
  if (!elements.empty()) {
    const std::string path = (dir / key_folder::galois_keys).string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("the program needs Galois keys and '" + path + "' cannot be opened");
    GaloisKeyFile file(in, context);
    for (std::uint32_t e : elements) {
      galois.push_back(file.load(e));
      keys.bytes_ += host_bytes(galois.back());
    }
  }
  keys.galois_ = engine.upload_galois_keys(galois);
  if (needed.sparse_encapsulation) {
    const auto encapsulation =
        load_sparse_encapsulation_keys_file((dir / key_folder::sparse_encapsulation_keys).string(), context);
    keys.bytes_ += host_bytes(encapsulation.dense_to_sparse) + host_bytes(encapsulation.sparse_to_dense);
    keys.sparse_encapsulation_ = upload_sparse_encapsulation(engine, encapsulation);
  }
  return keys;
}

EvaluationKeys EvaluationKeys::broadcast(const KeyRequirements& needed, Communicator& communicator,
                                         const Engine& engine, const EvaluationKeys* root_keys, int root) {
  const bool is_root = communicator.rank() == root;
  if (is_root && !root_keys) {
    throw InvalidArgumentError("EvaluationKeys::broadcast: rank " + std::to_string(root) +
                               " is the root and passed no keys");
  }
  if (is_root && ((needed.relinearization && !root_keys->relinearization_) ||
                  (needed.sparse_encapsulation && !root_keys->sparse_encapsulation_))) {
    throw MissingKeyError("EvaluationKeys::broadcast: the root's keys lack a key the program needs");
  }
  EvaluationKeys keys;
  if (needed.relinearization) {
    keys.relinearization_ = communicator.broadcast(engine, is_root ? &*root_keys->relinearization_ : nullptr, root);
  }
  keys.galois_ = communicator.broadcast(engine, is_root ? &root_keys->galois_ : nullptr, root);
  if (needed.sparse_encapsulation) {
    const SparseEncapsulation* theirs = is_root ? &*root_keys->sparse_encapsulation_ : nullptr;
    // Each rank builds the low context from its own (the broadcast checks that the parameters agree).
    SparseEncapsulation mine;
    mine.low_engine = is_root
                          ? theirs->low_engine
                          : std::make_shared<Engine>(encapsulation_low_context(engine.context()), engine.backend_ptr());
    mine.dense_to_sparse = communicator.broadcast(*mine.low_engine, is_root ? &theirs->dense_to_sparse : nullptr, root);
    mine.sparse_to_dense = communicator.broadcast(engine, is_root ? &theirs->sparse_to_dense : nullptr, root);
    keys.sparse_encapsulation_ = std::move(mine);
  }
  keys.bytes_ = is_root ? root_keys->bytes_ : 0;
  return keys;
}

Materials EvaluationKeys::materials() const {
  Materials m;
  m.relinearization_key = relinearization_ ? &*relinearization_ : nullptr;
  m.galois_keys = &galois_;
  m.sparse_encapsulation = sparse_encapsulation_ ? &*sparse_encapsulation_ : nullptr;
  return m;
}

}  // namespace fhelium::runtime
