// The negacyclic NTT in 32-bit words on the GPU (the 32-bit word family).
// The same transform as NttTable32 (core), bit for bit: Cooley-Tukey forward
// and Gentleman-Sande inverse with Shoup constants, primes below 2^31 (below
// 2^30 Harvey's lazy butterflies keep values below 4q; from 2^30 every
// value stays below q). One launch per transform: a cluster of 8 blocks per
// limb, the column stages (distance >= N/8) in registers and the tile stages
// in shared memory, the words crossing between them through distributed
// shared memory, so each word is read and written once (ntt32.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "device_types.hpp"
#include "fhelium/backend/ntt32.hpp"

namespace fhelium::cuda {

class DeviceNtt32 {
 public:
  // One table per prime, all of one ring degree (2^10 to 2^17).
  explicit DeviceNtt32(const std::vector<NttTable32>& tables);
  ~DeviceNtt32();
  DeviceNtt32(const DeviceNtt32&) = delete;
  DeviceNtt32& operator=(const DeviceNtt32&) = delete;

  // In place on `limbs` limbs of N words, values in [0, q) in and out;
  // ordered on `stream`. Limb b uses prime limb_primes[b % period] (a device
  // array of table indices; a negative entry leaves limb b as it is), or
  // b % primes without one.
  void forward(u32* data, int limbs, cudaStream_t stream, const int* limb_primes = nullptr, int period = 1) const;
  void inverse(u32* data, int limbs, cudaStream_t stream, const int* limb_primes = nullptr, int period = 1) const;

 private:
  std::uint64_t n_;
  int primes_;
  u32* tables_ = nullptr;   // per prime: N (root, Shoup constant) pairs forward, then N inverse
  u32* scalars_ = nullptr;  // per prime: q, n^-1, its Shoup constant
};

}  // namespace fhelium::cuda
