// CUDA errors become fhelium::BackendError carrying the CUDA error string.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace fhelium::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t error, const std::string& what);

// Throws when `error` is not cudaSuccess; `what` names the call.
inline void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) throw_cuda_error(error, what);
}

// After a kernel launch: throws with the kernel's name on a launch error.
void check_launch(const char* kernel);

}  // namespace fhelium::cuda
