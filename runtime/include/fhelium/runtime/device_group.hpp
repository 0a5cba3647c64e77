// Several devices of one host: one rank per device, each with its own Engine
// (a GPU by index, or a cpu backend) on its own thread, and the collectives
// between them (docs/multi-device.md). Every rank calls the same collectives
// in the same order (SPMD, as with NCCL); a rank that calls another one, that
// fails or that does not arrive within the timeout fails the whole group
// with a CommunicatorError naming it, so no rank waits forever.
//
// Transport: after connect(), the backends' device collectives (NCCL
// between cuda backends, memory copies between cpu backends) move broadcasts
// and all-gathers device to device, with only the metadata through the host;
// otherwise (and always for scatter and gather) host staging: a sender
// downloads its stored residues once and every receiver uploads them. Either
// way the bytes are the stored words, so a received value is bit-identical
// to the sent one.
// all_reduce_sum gathers every rank's value and adds them in rank order with
// the Engine's modular add (a sum of residues mod each prime, exact in any
// order), so every rank holds the same residues as one device summing the
// same values.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/value.hpp"

namespace fhelium::runtime {

struct GroupOptions {
  // How long a collective waits for the other ranks before the group fails.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

// What one rank moved, for reports.
struct TransferStats {
  std::size_t collectives = 0;
  std::size_t bytes_sent = 0;      // downloaded from this rank's backend for others
  std::size_t bytes_received = 0;  // uploaded into this rank's backend from others
};

namespace detail {
class Rendezvous;
}

// One rank's side of the group; valid inside DeviceGroup::run.
class Communicator {
 public:
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();
  int rank() const { return rank_; }
  int size() const;

  // Every rank passes what it holds for `what` (a context fingerprint, a
  // program's text): CommunicatorError naming each rank that differs from
  // rank 0, and where, before any data moves.
  void check_agreement(const std::string& what, const std::string& value);
  void barrier();

  // Joins the device collectives of every rank's engine's backend when all
  // ranks' backends are of one kind that has them (Backend::communicator_id)
  // and every rank could join, for the later collectives on that backend;
  // returns whether it did (the same on every rank). Without it, or on
  // another backend, data is staged through the host; not_connected() says why.
  bool connect(const Engine& engine);
  bool connected() const { return device_ != nullptr; }
  const std::string& not_connected() const { return not_connected_; }

  // The root passes its value, the others nullptr; every rank gets its own
  // copy on `engine` (the root's own value, unchanged).
  Ciphertext broadcast(const Engine& engine, const Ciphertext* value, int root);
  Plaintext broadcast(const Engine& engine, const Plaintext* value, int root);
  SwitchKey broadcast(const Engine& engine, const SwitchKey* key, int root);
  RelinKey broadcast(const Engine& engine, const RelinKey* key, int root);
  GaloisKeys broadcast(const Engine& engine, const GaloisKeys* keys, int root);
  // The root passes size() values (value r goes to rank r), the others none.
  Ciphertext scatter(const Engine& engine, std::span<const Ciphertext> values, int root);
  // The root gets every rank's value in rank order; the others an empty vector.
  std::vector<Ciphertext> gather(const Engine& engine, const Ciphertext& value, int root);
  std::vector<Ciphertext> all_gather(const Engine& engine, const Ciphertext& value);
  // The sum of every rank's value (their states must be equal), the same
  // residues on every rank.
  Ciphertext all_reduce_sum(const Engine& engine, const Ciphertext& value);

  const TransferStats& stats() const { return stats_; }

 private:
  friend class DeviceGroup;
  Communicator(std::shared_ptr<detail::Rendezvous> rendezvous, int rank);
  // The device collectives when `engine` is on the connected backend.
  DeviceCommunicator* device_for(const Engine& engine) const;
  template <class V>
  V broadcast_value(const Engine& engine, const V* value, int root);

  std::shared_ptr<detail::Rendezvous> rendezvous_;
  int rank_ = 0;
  TransferStats stats_;
  std::unique_ptr<DeviceCommunicator> device_;
  const Backend* device_backend_ = nullptr;
  std::string not_connected_;
};

class DeviceGroup {
 public:
  explicit DeviceGroup(int ranks, GroupOptions options = {});
  int size() const { return ranks_; }

  // Runs body on one thread per rank and waits for all of them. A rank that
  // throws fails the group: the other ranks' collectives throw
  // CommunicatorError naming it. Then the error that started the failure is
  // rethrown (the rank's own, or the timeout). Returns each rank's stats.
  std::vector<TransferStats> run(const std::function<void(Communicator&)>& body);

 private:
  int ranks_;
  GroupOptions options_;
};

}  // namespace fhelium::runtime
