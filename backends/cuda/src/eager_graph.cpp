#include "eager_graph.hpp"

#include "ab_switch.hpp"
#include "cuda_check.hpp"

namespace fhelium::cuda {

EagerGraphs::~EagerGraphs() {
  for (const auto& [shape, exec] : executables_) cudaGraphExecDestroy(exec);  // in-flight launches finish first
  (void)cudaGetLastError();
}

bool EagerGraphs::enabled() {
  static const bool on = !env_is("FHELIUM_CUDA_EAGER_GRAPHS", "0");
  return on;
}

void EagerGraphs::run(cudaStream_t stream, const Shape& shape, const std::function<void()>& issue) {
  // Thread-local mode: only this thread's unsafe calls would end the capture.
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture (eager graph)");
  cudaGraph_t graph = nullptr;
  try {
    issue();
  } catch (...) {
    (void)cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture (eager graph)");
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
    if (executables_.size() >= max_kept) {
      for (const auto& [s, exec] : executables_) cudaGraphExecDestroy(exec);
      executables_.clear();
    }
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
