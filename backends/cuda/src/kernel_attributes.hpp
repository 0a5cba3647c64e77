// Launch attributes of kernels, set once per (device, kernel).
//
// The record is keyed by the kernel's address, not kept in a flag per
// template instantiation: nvcc 13 gives the host stubs of template kernels
// internal linkage, so each translation unit launches its own copy of
// forward_tiles<..., PlainBatch>, and a flag shared by the units' (merged)
// launch functions would leave every copy but the first without its
// attributes.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <utility>

#include "cuda_check.hpp"

namespace fhelium::cuda {

struct KernelAttributeRecord {
  std::mutex mutex;
  std::map<std::pair<int, const void*>, int> smem_limit;  // bytes set so far
  std::map<std::pair<int, const void*>, int> capacity;    // set-up done: what setup() returned
};

inline KernelAttributeRecord& kernel_attribute_record() {
  static KernelAttributeRecord record;
  return record;
}

inline int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// Raises a kernel's dynamic shared memory limit to at least `bytes` on the
// current device.
inline void allow_dynamic_smem_bytes(const void* kernel, int bytes) {
  if (bytes <= 48 * 1024) return;
  const std::pair key{current_device(), kernel};
  KernelAttributeRecord& r = kernel_attribute_record();
  const std::lock_guard lock(r.mutex);
  int& limit = r.smem_limit[key];
  if (limit >= bytes) return;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
        "cudaFuncSetAttribute (dynamic shared memory)");
  limit = bytes;
}

// Runs setup() (attributes; returns how many of the kernel's blocks or
// clusters the device runs at once, 0 if none) the first time `kernel` is
// seen on the current device, and returns its recorded result. A setup that
// throws records nothing.
template <class Setup>
int set_up_once(const void* kernel, Setup&& setup) {
  const std::pair key{current_device(), kernel};
  KernelAttributeRecord& r = kernel_attribute_record();
  const std::lock_guard lock(r.mutex);
  if (const auto it = r.capacity.find(key); it != r.capacity.end()) return it->second;
  const int capacity = setup();
  r.capacity.emplace(key, capacity);
  return capacity;
}

}  // namespace fhelium::cuda
