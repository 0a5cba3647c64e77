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
#include "narrow_types.hpp"

namespace fhelium::cuda {

// A forward transform's words combined on their way out, as a key switch's
// ModDown and a rescale end: transform limb b is limb i = b % limbs of
// component c = b / limbs, and out_c limb i = (X - y) w_i + add_c(X^g_c)
// mod q_i, y the transform's word, X = x_c limb source_i times A_i (as it is
// unless scale_x; 0 where source_i < 0 or x_c is null), add_c read through
// X -> X^g_c when g_c is not 0. With add_at_source (a key switch that takes
// the rescale), add_c is read as x_c is, limb source_i times add_factor_i (0
// where source_i < 0), and not through X^g. The input is left as it was.
struct ForwardCombine {
  static constexpr int max_components = 3;
  int limbs;
  u32* out[max_components];
  const u32* x[max_components];
  const u32* add[max_components];
  u32 add_galois[max_components];
  int source[narrow::max_limbs];
  bool scale_x;
  narrow::LimbConstants x_factor;  // A_i, the factor of x
  narrow::LimbConstants w;
  bool add_at_source;
  narrow::LimbConstants add_factor;
};

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
  // The forward transform of `data` (limbs = components x combine.limbs),
  // written combined (ForwardCombine) to combine.out instead of in place.
  void forward_combined(const u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period,
                        const ForwardCombine& combine) const;

 private:
  std::uint64_t n_;
  int primes_;
  u32* tables_ = nullptr;   // per prime: N (root, Shoup constant) pairs forward, then N inverse
  u32* scalars_ = nullptr;  // per prime: q, n^-1, its Shoup constant
};

}  // namespace fhelium::cuda
