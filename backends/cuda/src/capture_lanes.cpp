#include "capture_lanes.hpp"

#include <utility>

#include "cuda_check.hpp"

namespace fhelium::cuda {

CaptureLanes::CaptureLanes() {
  try {
    check(cudaEventCreateWithFlags(&start_, cudaEventDisableTiming), "cudaEventCreate (capture lanes)");
    for (int i = 0; i < count; ++i) {
      check(cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking), "cudaStreamCreate (capture lane)");
      check(cudaEventCreateWithFlags(&joined_[i], cudaEventDisableTiming), "cudaEventCreate (capture lanes)");
    }
  } catch (...) {
    release();
    throw;
  }
}

CaptureLanes::~CaptureLanes() { release(); }

void CaptureLanes::release() noexcept {
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  done_.clear();
  for (int i = 0; i < count; ++i) {
    if (joined_[i]) cudaEventDestroy(std::exchange(joined_[i], nullptr));
    if (streams_[i]) cudaStreamDestroy(std::exchange(streams_[i], nullptr));
  }
  if (start_) cudaEventDestroy(std::exchange(start_, nullptr));
}

void CaptureLanes::begin(cudaStream_t origin) {
  planner_.reset();
  pending_ = -1;
  check(cudaEventRecord(start_, origin), "cudaEventRecord (capture start)");
}

LaneStream CaptureLanes::schedule(std::span<const MemoryAccess> accesses, bool heavy) {
  while (done_.size() <= static_cast<std::size_t>(planner_.operations())) {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (capture lanes)");
    done_.push_back(e);
  }
  const int id = planner_.operations();
  const LanePlan plan = planner_.add(accesses, heavy);
  const cudaStream_t stream = streams_[static_cast<std::size_t>(plan.lane)];
  if (plan.fork) check(cudaStreamWaitEvent(stream, start_, 0), "cudaStreamWaitEvent (capture lane fork)");
  for (const int op : plan.waits) {
    check(cudaStreamWaitEvent(stream, done_[static_cast<std::size_t>(op)], 0), "cudaStreamWaitEvent (capture lane)");
  }
  pending_ = id;
  pending_stream_ = stream;
  return {stream, plan.lane};
}

void CaptureLanes::finish() {
  if (pending_ < 0) return;
  const int id = std::exchange(pending_, -1);
  check(cudaEventRecord(done_[static_cast<std::size_t>(id)], pending_stream_), "cudaEventRecord (capture lane)");
}

// Each lane's whole captured sequence, through an event recorded now (an
// operation that failed half-way never recorded its own).
cudaError_t CaptureLanes::join(cudaStream_t origin) noexcept {
  cudaError_t first = cudaSuccess;
  for (int i = 0; i < count; ++i) {
    if (planner_.tails()[static_cast<std::size_t>(i)] < 0) continue;
    cudaError_t e = cudaEventRecord(joined_[i], streams_[i]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(origin, joined_[i], 0);
    if (first == cudaSuccess) first = e;
  }
  planner_.reset();
  pending_ = -1;
  return first;
}

}  // namespace fhelium::cuda
