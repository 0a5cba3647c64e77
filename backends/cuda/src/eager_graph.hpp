// Multi-kernel operations issued eagerly through an executable CUDA graph.
//
// Launched one by one on a stream, the kernels of a key switch wait on the
// GPU for each launch's dependency to resolve (at 2^14 a key switch took
// 61 us eagerly against 51 us replayed as a graph, with the host issuing
// in 24 us). EagerGraphs captures an operation's launches from the stream
// on a private stream instead (nothing runs during the capture), moves them
// into the executable graph it keeps for that operation's shape
// (cudaGraphExecUpdate: the same topology with new arguments), and launches
// it on the operation's stream: the operation stays asynchronous and
// stream-ordered, and its GPU time is the replayed graph's. The capture
// stream is private so that work another thread puts on the operation's
// stream meanwhile (an upload, a buffer's release) runs, instead of being
// recorded into the graph. Not for a stream that is being captured already
// (the caller then issues the launches directly, into that capture).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <tuple>

namespace fhelium::cuda {

class EagerGraphs {
 public:
  // What fixes a graph's topology: the operation, its context and level, and
  // a count (rotations of a hoisted batch; negative: run side by side). A
  // topology that changes anyway is caught by the update and instantiated
  // anew.
  using Shape = std::tuple<const char*, const void*, int, int>;  // the name: a string literal

  EagerGraphs() = default;
  ~EagerGraphs();  // on the device of the streams used
  EagerGraphs(const EagerGraphs&) = delete;
  EagerGraphs& operator=(const EagerGraphs&) = delete;

  // Captures issue(capture) (launches on the stream `capture`, and on
  // streams forked from it and joined back) and launches it on `stream` as
  // the graph kept for `shape`. When issue() throws, the capture is
  // discarded and nothing runs. One call at a time.
  void run(cudaStream_t stream, const Shape& shape, const std::function<void(cudaStream_t capture)>& issue);

 private:
  void clear() noexcept;
  static constexpr std::size_t max_kept = 64;  // stale contexts' graphs are dropped past this
  std::map<Shape, cudaGraphExec_t> executables_;
  cudaStream_t capture_ = nullptr;  // created on first use, on the current device
};

}  // namespace fhelium::cuda
