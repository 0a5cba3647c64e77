// 16-byte global-memory accesses to consecutive words: two words (or a run
// of them) per load or store instruction, half the instructions of 8-byte
// accesses. Addresses must be 16-byte aligned: an even word of a limb.
#pragma once

#include "device_types.hpp"

namespace fhelium::cuda {

__device__ __forceinline__ ulonglong2 load_pair(const u64* p) { return *reinterpret_cast<const ulonglong2*>(p); }

__device__ __forceinline__ void store_pair(u64* p, ulonglong2 v) { *reinterpret_cast<ulonglong2*>(p) = v; }

// W (even) consecutive words from p.
template <int W>
__device__ __forceinline__ void load_run(const u64* p, u64 (&out)[W]) {
  static_assert(W % 2 == 0);
#pragma unroll
  for (int e = 0; e < W; e += 2) {
    const ulonglong2 v = load_pair(p + e);
    out[e] = v.x;
    out[e + 1] = v.y;
  }
}

}  // namespace fhelium::cuda
