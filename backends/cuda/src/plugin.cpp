// The CUDA backend as a plugin: libfhelium-backend-cuda.so (CUDA runtime
// linked statically). Creating it fails with a clear error when no GPU is
// present, so callers can fall back to the CPU backend.
#include <string>

#include "fhelium/cuda/cuda_backend.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make_backend(int device) { return fhelium::cuda::make_cuda_backend({device}); }

std::string describe(fhelium::Backend& backend) { return fhelium::cuda::device_description(backend); }

}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN_WITH_DEVICES("cuda", "0.1.0", make_backend, describe)
