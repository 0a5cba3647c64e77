// Device memory owned by a backend context: one allocation, and the pool of
// key-switching workspaces that grows a lane at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "device_runtime.hpp"
#include "device_types.hpp"

namespace fhelium::cuda {

// Device memory owned by a context (freed, stream-ordered, with it).
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(std::shared_ptr<DeviceRuntime> runtime, std::size_t bytes)
      : runtime_(std::move(runtime)), pointer_(runtime_->allocate(bytes)), bytes_(bytes) {}
  ~DeviceAllocation() {
    if (runtime_) runtime_->release(pointer_, bytes_);
  }
  DeviceAllocation(DeviceAllocation&& other) noexcept
      : runtime_(std::move(other.runtime_)),
        pointer_(std::exchange(other.pointer_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept {
    if (this != &other) {
      if (runtime_) runtime_->release(pointer_, bytes_);
      runtime_ = std::move(other.runtime_);
      pointer_ = std::exchange(other.pointer_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  u64* words() const { return static_cast<u64*>(pointer_); }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// Workspace buffers of whole limbs (N words). A lane's buffers are gathered
// in a Batch and join the pool only when every one of them was allocated:
// running out of device memory partway frees the part made (the Batch's
// destructor), so a later capture can try again.
class WorkspacePool {
 public:
  WorkspacePool(std::shared_ptr<DeviceRuntime> runtime, std::size_t ring_degree)
      : runtime_(std::move(runtime)), ring_degree_(ring_degree) {}

  class Batch {
   public:
    // `count` limbs of Word, or null when count is 0.
    template <class Word>
    Word* limbs(std::size_t count) {
      if (count == 0) return nullptr;
      const std::size_t bytes = count * ring_degree_ * sizeof(Word);
      bytes_ += bytes;
      return reinterpret_cast<Word*>(buffers_.emplace_back(runtime_, bytes).words());
    }

   private:
    friend class WorkspacePool;
    Batch(std::shared_ptr<DeviceRuntime> runtime, std::size_t ring_degree)
        : runtime_(std::move(runtime)), ring_degree_(ring_degree) {}
    std::shared_ptr<DeviceRuntime> runtime_;
    std::size_t ring_degree_;
    std::vector<DeviceAllocation> buffers_;
    std::size_t bytes_ = 0;
  };

  Batch batch() const { return Batch(runtime_, ring_degree_); }
  // The batch's buffers join the pool (moves keep their words).
  void keep(Batch&& batch) {
    buffers_.reserve(buffers_.size() + batch.buffers_.size());  // no throw below
    for (DeviceAllocation& buffer : batch.buffers_) buffers_.push_back(std::move(buffer));
    bytes_ += batch.bytes_;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  std::size_t ring_degree_;
  std::vector<DeviceAllocation> buffers_;
  std::size_t bytes_ = 0;
};

}  // namespace fhelium::cuda
