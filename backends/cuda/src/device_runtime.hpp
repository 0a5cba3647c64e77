// One device's stream, stream-ordered memory pool and pinned staging buffers.
// Every buffer and context of a CUDA backend holds a shared_ptr to it, so the
// stream and pool outlive them.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "fhelium/backend.hpp"

namespace fhelium::cuda {

class DeviceRuntime {
 public:
  // Throws BackendError when the device does not exist or cannot be used.
  explicit DeviceRuntime(int device);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  int device() const { return device_; }
  const std::string& device_name() const { return name_; }
  cudaStream_t stream() const { return stream_; }
  // Makes this runtime's device current on the calling thread.
  void activate() const;

  // Stream-ordered allocation from the pool (no host synchronization).
  void* allocate(std::size_t bytes);
  void release(void* pointer) noexcept;

  // Host -> device through pinned staging; returns once the host memory may
  // be reused (the copy itself may still be in flight on the stream).
  void upload(void* device_dst, const void* host_src, std::size_t bytes);
  // Device -> host through pinned staging; waits for the stream.
  void download(void* host_dst, const void* device_src, std::size_t bytes);
  // Fills device memory with a byte value (stream-ordered).
  void fill(void* device_dst, int byte, std::size_t bytes);
  void synchronize();

 private:
  static constexpr std::size_t staging_bytes = std::size_t{8} << 20;

  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  std::array<void*, 2> staging_{};
  std::array<cudaEvent_t, 2> staging_done_{};
  std::mutex staging_mutex_;
};

// Backend memory: `bytes` bytes of device memory from the runtime's pool.
class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(std::shared_ptr<DeviceRuntime> runtime, std::size_t bytes);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t size_bytes() const override { return bytes_; }
  std::uint64_t* data() const { return static_cast<std::uint64_t*>(pointer_); }
  const DeviceRuntime& runtime() const { return *runtime_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  void* pointer_ = nullptr;
  std::size_t bytes_;
};

}  // namespace fhelium::cuda
