// The CUDA backend: every Backend operation as CUDA kernels on one
// non-blocking stream, with device memory from a stream-ordered pool. Residues
// are bit-identical to the CPU reference backend's (see docs/core.md).
//
// Streams and events are CUDA streams (non-blocking) and events; copy is a
// device-to-device cudaMemcpyAsync. memory_usage is the pool's used memory
// (and its high-water mark) plus capture memory. Capture records the
// backend stream's work into a CUDA Graph (relaxed mode) that keeps only
// the operations' data dependencies (independent ones run side by side on
// replay); buffers allocated
// during a capture come from cudaMalloc blocks owned by the recording (reused
// after release within the capture) and stay valid while the recording or
// the buffer lives. An operation that fails during a capture ends the capture
// and discards its partial graph; end_capture then reports the failure.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "fhelium/backend/backend.hpp"

namespace fhelium::cuda {

struct CudaBackendOptions {
  int device = 0;  // CUDA device ordinal
};

// True when the CUDA runtime finds at least one usable device.
bool device_available();

// Throws BackendError naming the device and the CUDA error when the device
// does not exist or cannot be initialised.
std::shared_ptr<Backend> make_cuda_backend(CudaBackendOptions options = {});

// One line naming the backend's device: ordinal, name, memory, SMs, compute capability.
std::string device_description(const Backend& backend);

// The backend's stream as a `cudaStream_t` (for timing with CUDA events and
// for graph capture). Throws BackendError when `backend` is not a CUDA backend.
void* native_stream(const Backend& backend);

// The number of nodes of a CUDA recording's graph that depend on no other
// node: more than one when independent operations were recorded side by
// side. Throws BackendError when `recording` is not a CUDA recording.
std::size_t graph_root_count(const Recording& recording);

}  // namespace fhelium::cuda
