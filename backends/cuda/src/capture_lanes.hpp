// The streams of a capture with lanes (lane_planner.hpp): each operation of
// the capture is issued on the lane its planner chose, after waiting for the
// operations it depends on; at the end the capture's origin waits for every
// lane, so the graph's sinks are all joined. Not thread-safe: the device
// runtime serializes the calls, and the backend's lock keeps each
// operation's schedule() and finish() together (one operation pending).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <span>
#include <vector>

#include "lane_planner.hpp"

namespace fhelium::cuda {

// The stream an operation issues on, and its lane (0 outside a capture).
struct LaneStream {
  cudaStream_t stream = nullptr;
  int lane = 0;
};

class CaptureLanes {
 public:
  static constexpr int count = 4;
  // Lanes 0..heavy_count-1 take key switches, each with its own workspace:
  // two independent key switches (EvalMod's real and imaginary parts, a
  // transform's giant steps) run side by side.
  static constexpr int heavy_count = 2;

  // Streams and events on the current device.
  CaptureLanes();
  ~CaptureLanes();
  CaptureLanes(const CaptureLanes&) = delete;
  CaptureLanes& operator=(const CaptureLanes&) = delete;

  // A capture of `origin` has begun: lanes fork from this point.
  void begin(cudaStream_t origin);
  // The stream for the next operation, which touches `accesses` (`heavy`:
  // see LanePlanner::add), once it has waited for the operations it depends on.
  LaneStream schedule(std::span<const MemoryAccess> accesses, bool heavy);
  // The operation scheduled last has issued all its launches.
  void finish();
  // `origin` waits for the work of every lane used (before the capture ends).
  cudaError_t join(cudaStream_t origin) noexcept;

 private:
  void release() noexcept;

  std::array<cudaStream_t, count> streams_{};
  std::array<cudaEvent_t, count> joined_{};
  cudaEvent_t start_ = nullptr;
  std::vector<cudaEvent_t> done_;  // per operation id, reused by later captures
  LanePlanner planner_{count, heavy_count};
  int pending_ = -1;  // the operation scheduled and not finished
  cudaStream_t pending_stream_ = nullptr;
};

}  // namespace fhelium::cuda
