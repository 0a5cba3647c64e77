// The evaluation keys a prepared program needs (its KeyRequirements), made
// from a secret key or read from a key folder, and uploaded to an engine:
// exactly those keys, so a program links with no unused key and none
// missing. The secret key never leaves the host.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/random.hpp"
#include "fhelium/runtime/device_group.hpp"
#include "fhelium/runtime/program.hpp"
#include "fhelium/sparse_encapsulation.hpp"

namespace fhelium::runtime {

// The sparse-secret encapsulation keys on `engine`'s backend (StateError when
// they were made for another context).
SparseEncapsulation upload_sparse_encapsulation(const Engine& engine, const SparseEncapsulationKeys& keys);

class EvaluationKeys {
 public:
  // Called after each key is made: keys done, keys in all, which key.
  using Progress = std::function<void(std::size_t done, std::size_t total, const std::string& key)>;

  static EvaluationKeys generate(const KeyRequirements& needed, const Engine& engine, KeyGenerator& keygen,
                                 const SecretKey& secret, Csprng& rng, const Progress& progress = {});
  // From a key folder (fhelium/runtime/key_folder.hpp): only the keys needed
  // are read; a missing file or key is an error naming it.
  static EvaluationKeys load(const KeyRequirements& needed, const Engine& engine, const std::string& folder);

  // Every rank of a DeviceGroup calls it with the same `needed`: the root
  // passes its keys, the others nullptr, and each gets the root's keys on
  // `engine` (data-parallel runs replicate the keys once this way).
  static EvaluationKeys broadcast(const KeyRequirements& needed, Communicator& communicator, const Engine& engine,
                                  const EvaluationKeys* root_keys, int root = 0);

  // The keys for runtime::link, borrowed: this object must stay where it is
  // (not moved) while an Executable linked with them lives.
  Materials materials() const;
  // Bytes of the keys as made or read on the host.
  std::size_t bytes() const { return bytes_; }

 private:
  std::optional<RelinKey> relinearization_;
  GaloisKeys galois_;
  std::optional<SparseEncapsulation> sparse_encapsulation_;
  std::size_t bytes_ = 0;
};

}  // namespace fhelium::runtime
