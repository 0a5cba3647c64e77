#include "eager_graph.hpp"

#include "cuda_check.hpp"

namespace fhelium::cuda {

EagerGraphs::~EagerGraphs() {
  clear();
  if (capture_) cudaStreamDestroy(capture_);
  (void)cudaGetLastError();
}

void EagerGraphs::clear() noexcept {
  for (const auto& [shape, exec] : executables_) cudaGraphExecDestroy(exec);  // in-flight launches finish first
  executables_.clear();
}

void EagerGraphs::run(cudaStream_t stream, const Shape& shape,
                      const std::function<void(cudaStream_t capture)>& issue) {
  if (!capture_) check(cudaStreamCreateWithFlags(&capture_, cudaStreamNonBlocking), "cudaStreamCreate (eager graph)");
  // Thread-local mode: only this thread's unsafe calls would end the capture.
  check(cudaStreamBeginCapture(capture_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture (eager graph)");
  cudaGraph_t graph = nullptr;
  try {
    issue(capture_);
  } catch (...) {
    (void)cudaStreamEndCapture(capture_, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(capture_, &graph);
  if (ended != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    throw_cuda_error(ended, "cudaStreamEndCapture (eager graph)");
  }
  auto kept = executables_.find(shape);
  cudaError_t error = cudaSuccess;
  if (kept != executables_.end()) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(kept->second, graph, &info) != cudaSuccess) {
      (void)cudaGetLastError();  // another topology: instantiate it below
      cudaGraphExecDestroy(kept->second);
      executables_.erase(kept);
      kept = executables_.end();
    }
  }
  if (kept == executables_.end()) {
    if (executables_.size() >= max_kept) clear();
    cudaGraphExec_t exec = nullptr;
    // The side stream's kernels keep their higher priority (kernel nodes take it from the captured stream).
    error = cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority);
    if (error == cudaSuccess) kept = executables_.emplace(shape, exec).first;
  }
  cudaGraphDestroy(graph);
  if (error != cudaSuccess) throw_cuda_error(error, "cudaGraphInstantiate (eager graph)");
  check(cudaGraphLaunch(kept->second, stream), "cudaGraphLaunch (eager graph)");
}

}  // namespace fhelium::cuda
