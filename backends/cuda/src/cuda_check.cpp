#include "cuda_check.hpp"

#include "fhelium/error.hpp"

namespace fhelium::cuda {

void throw_cuda_error(cudaError_t error, const std::string& what) {
  // Clears the error unless it is sticky (the context is then unusable and
  // every later call reports it too).
  (void)cudaGetLastError();
  throw BackendError("cuda: " + what + " failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

void check_launch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) throw_cuda_error(error, std::string("launch of kernel ") + kernel);
}

}  // namespace fhelium::cuda
