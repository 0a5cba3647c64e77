// The meeting point of a DeviceGroup's ranks: each collective is one
// exchange, in which every rank leaves a host object and takes everyone's.
// Ranks must call the same operation; a rank that does not arrive within the
// timeout, or that failed, fails the group for everyone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fhelium::runtime::detail {

struct Contribution {
  std::string operation;                // "broadcast (root 0)", ...
  std::shared_ptr<const void> payload;  // the rank's host object, or null
};

class Rendezvous {
 public:
  Rendezvous(int ranks, std::chrono::milliseconds timeout);
  int size() const { return ranks_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Leaves `payload` for `operation` and returns every rank's contribution,
  // in rank order, once all have arrived. Throws CommunicatorError when the
  // group failed, when a rank called another operation, or after `patience`
  // timeouts (more than 1 after a step that itself may take a timeout).
  std::shared_ptr<const std::vector<Contribution>> exchange(int rank, const std::string& operation,
                                                            std::shared_ptr<const void> payload, int patience = 1);
  // Fails the group with `reason` (the first reason wins); wakes every rank.
  // Returns whether this call was the first.
  bool fail(const std::string& reason);

 private:
  const int ranks_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable arrived_all_;
  std::uint64_t generation_ = 0;  // exchanges completed
  int arrived_ = 0;
  std::vector<std::optional<Contribution>> pending_;
  std::shared_ptr<const std::vector<Contribution>> released_;
  std::optional<std::string> failure_;
};

}  // namespace fhelium::runtime::detail
