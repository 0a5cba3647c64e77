// Multi-kernel operations issued eagerly through an executable CUDA graph.
//
// Launched one by one on a stream, the kernels of a key switch wait on the
// GPU for each launch's dependency to resolve (at 2^14 a key switch took
// 61 us eagerly against 51 us replayed as a graph, with the host issuing
// in 24 us). EagerGraphs captures an operation's launches from the stream
// instead (nothing runs during the capture), moves them into the
// executable graph it keeps for that operation's shape (cudaGraphExecUpdate:
// the same topology with new arguments), and launches it: the operation
// stays asynchronous and stream-ordered, and its GPU time is the replayed
// graph's. Not for a stream that is being captured already (the caller then
// issues the launches directly, into that capture).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <string>
#include <tuple>

namespace fhelium::cuda {

class EagerGraphs {
 public:
  // What fixes a graph's topology: the operation, its context and level, and
  // a count (rotations of a hoisted batch). A topology that changes anyway
  // is caught by the update and instantiated anew.
  using Shape = std::tuple<std::string, const void*, int, int>;

  EagerGraphs() = default;
  ~EagerGraphs();
  EagerGraphs(const EagerGraphs&) = delete;
  EagerGraphs& operator=(const EagerGraphs&) = delete;

  // Captures issue() (launches on `stream`, and on streams forked from it
  // and joined back) and launches it as the graph kept for `shape`. When
  // issue() throws, the capture is discarded and nothing runs.
  void run(cudaStream_t stream, const Shape& shape, const std::function<void()>& issue);

  // Whether operations go through graphs: FHELIUM_CUDA_EAGER_GRAPHS=0 launches
  // them one by one (A/B measurements).
  static bool enabled();

 private:
  static constexpr std::size_t max_kept = 64;  // stale contexts' graphs are dropped past this
  std::map<Shape, cudaGraphExec_t> executables_;
};

}  // namespace fhelium::cuda
