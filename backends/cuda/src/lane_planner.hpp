// Which stream (lane) each operation of a capture goes to, and which earlier
// operations it must wait for, from the memory each one reads and writes.
//
// A capture recorded on one stream is a chain: every operation waits for the
// one before, even where nothing connects them (eight plaintext products of
// eight rotations). With lanes, an operation waits only for the earlier
// operations that wrote what it reads or writes, or read what it writes; the
// graph then holds the data's own dependencies, and independent latency-bound
// kernels run side by side on replay. Host-only: tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fhelium::cuda {

// Bytes [begin, end) of device memory that an operation reads or writes.
struct MemoryAccess {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool write = false;
};

inline MemoryAccess access_of(const void* at, std::size_t bytes, bool write) {
  const auto begin = reinterpret_cast<std::uintptr_t>(at);
  return {begin, begin + bytes, write};
}

struct LanePlan {
  int lane = 0;            // the stream the operation's launches go to
  bool fork = false;       // the lane's first use: it waits for the capture's start
  std::vector<int> waits;  // earlier operations (ids), on other lanes, to wait for
};

class LanePlanner {
 public:
  // Heavy operations go to the first `heavy_lanes` lanes only: each of those
  // lanes has its own key-switching workspace, which the lane's stream order
  // keeps to one user at a time.
  LanePlanner(int lanes, int heavy_lanes);

  int lanes() const { return static_cast<int>(tail_.size()); }
  // A new capture: no operations, every lane unused.
  void reset();
  // Plans the next operation (its id will be operations()) and records it.
  // A long operation (a key switch) is `heavy`: it takes one of the heavy
  // lanes, and an operation that does not depend on it is not queued behind
  // it while a lane ending in a light one is free.
  LanePlan add(std::span<const MemoryAccess> accesses, bool heavy = false);
  int operations() const { return static_cast<int>(lane_of_.size()); }
  // Each lane's last operation (-1: unused): what the end of the capture waits for.
  const std::vector<int>& tails() const { return tail_; }

 private:
  struct Recorded {
    MemoryAccess access;
    int op;
  };
  using Clock = std::vector<int>;  // per lane: the last operation known finished

  // The latest operation on each lane that an operation with `accesses` depends on (-1: none).
  Clock needs(std::span<const MemoryAccess> accesses) const;
  int choose_lane(const Clock& need, bool heavy) const;

  std::vector<Recorded> recorded_;
  std::vector<int> lane_of_;   // per operation
  std::vector<Clock> clock_;   // per operation: what has finished once it has
  std::vector<int> tail_;         // per lane
  std::vector<bool> tail_heavy_;  // per lane: whether its last operation is heavy
  int heavy_lanes_;
};

}  // namespace fhelium::cuda
