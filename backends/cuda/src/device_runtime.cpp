#include "device_runtime.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cuda_check.hpp"
#include "fhelium/error.hpp"

namespace fhelium::cuda {

DeviceRuntime::DeviceRuntime(int device) : device_(device) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError("cuda: no usable CUDA device for device " + std::to_string(device) + ": " +
                       cudaGetErrorName(counted) + ": " + cudaGetErrorString(counted));
  }
  if (device < 0 || device >= count) {
    throw BackendError("cuda: device " + std::to_string(device) + " does not exist: " + std::to_string(count) +
                       " CUDA device(s) present" +
                       (count > 0 ? " (valid ordinals 0.." + std::to_string(count - 1) + ")" : std::string()));
  }
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  name_ = properties.name;
  int pools = 0;
  check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device), "cudaDeviceGetAttribute");
  if (!pools) throw BackendError("cuda: device " + std::to_string(device) + " (" + name_ + ") has no memory pools");

  try {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    // Keep freed memory in the pool: steady-state allocations cost no driver call.
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    for (std::size_t i = 0; i < staging_.size(); ++i) {
      check(cudaMallocHost(&staging_[i], staging_bytes), "cudaMallocHost (staging)");
      check(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming), "cudaEventCreate");
    }
  } catch (...) {
    for (std::size_t i = 0; i < staging_.size(); ++i) {
      if (staging_done_[i]) cudaEventDestroy(staging_done_[i]);
      if (staging_[i]) cudaFreeHost(staging_[i]);
    }
    if (pool_) cudaMemPoolDestroy(pool_);
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

DeviceRuntime::~DeviceRuntime() {
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  for (std::size_t i = 0; i < staging_.size(); ++i) {
    cudaEventDestroy(staging_done_[i]);
    cudaFreeHost(staging_[i]);
  }
  cudaMemPoolDestroy(pool_);
  cudaStreamDestroy(stream_);
}

void DeviceRuntime::activate() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

void* DeviceRuntime::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  activate();
  void* pointer = nullptr;
  const cudaError_t error = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream_);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    (void)cudaGetLastError();
    throw BackendError("cuda: allocating " + std::to_string(bytes) + " bytes on device " + std::to_string(device_) +
                       " (" + name_ + ") failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error) +
                       " (" + std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total_bytes >> 20) +
                       " MiB)");
  }
  return pointer;
}

void DeviceRuntime::release(void* pointer) noexcept {
  if (!pointer) return;
  cudaSetDevice(device_);
  if (cudaFreeAsync(pointer, stream_) != cudaSuccess) (void)cudaGetLastError();
}

void DeviceRuntime::upload(void* device_dst, const void* host_src, std::size_t bytes) {
  activate();
  std::lock_guard lock(staging_mutex_);
  auto* dst = static_cast<unsigned char*>(device_dst);
  const auto* src = static_cast<const unsigned char*>(host_src);
  std::size_t chunk = 0;
  for (std::size_t offset = 0; offset < bytes; offset += staging_bytes, ++chunk) {
    const std::size_t i = chunk % staging_.size();
    const std::size_t length = std::min(staging_bytes, bytes - offset);
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (staging)");  // previous copy out of it
    std::memcpy(staging_[i], src + offset, length);
    check(cudaMemcpyAsync(dst + offset, staging_[i], length, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync (upload)");
    check(cudaEventRecord(staging_done_[i], stream_), "cudaEventRecord (staging)");
  }
}

void DeviceRuntime::download(void* host_dst, const void* device_src, std::size_t bytes) {
  activate();
  std::lock_guard lock(staging_mutex_);
  auto* dst = static_cast<unsigned char*>(host_dst);
  const auto* src = static_cast<const unsigned char*>(device_src);
  const std::size_t chunks = (bytes + staging_bytes - 1) / staging_bytes;
  auto issue = [&](std::size_t c) {
    const std::size_t i = c % staging_.size();
    const std::size_t offset = c * staging_bytes;
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (staging)");
    check(cudaMemcpyAsync(staging_[i], src + offset, std::min(staging_bytes, bytes - offset), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (download)");
    check(cudaEventRecord(staging_done_[i], stream_), "cudaEventRecord (staging)");
  };
  if (chunks > 0) issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);  // the next chunk copies while this one is read
    const std::size_t i = c % staging_.size();
    const std::size_t offset = c * staging_bytes;
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (download)");
    std::memcpy(dst + offset, staging_[i], std::min(staging_bytes, bytes - offset));
  }
  // Errors of earlier asynchronous work surface here too.
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (download)");
}

void DeviceRuntime::fill(void* device_dst, int byte, std::size_t bytes) {
  activate();
  check(cudaMemsetAsync(device_dst, byte, bytes, stream_), "cudaMemsetAsync");
}

void DeviceRuntime::synchronize() {
  activate();
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<DeviceRuntime> runtime, std::size_t bytes)
    : runtime_(std::move(runtime)), bytes_(bytes) {
  pointer_ = runtime_->allocate(bytes);
}

DeviceBuffer::~DeviceBuffer() { runtime_->release(pointer_); }

}  // namespace fhelium::cuda
