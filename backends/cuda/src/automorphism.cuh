// The NTT-order permutation of X -> X^g, computed on the fly (no table):
// out[i] = in[perm(i)] with perm(i) = bitrev(((2 bitrev(i) + 1) g mod 2N - 1) / 2),
// as Context::ntt_automorphism_permutation.
#pragma once

#include "device_types.hpp"

namespace fhelium::cuda {

__device__ __forceinline__ u32 automorphism_index(u32 i, u32 galois_element, int log_n) {
  const u32 rev = __brev(i) >> (32 - log_n);
  const u32 mask = (2u << log_n) - 1;  // 2N - 1; products wrap mod 2^32, a multiple of 2N
  const u32 image = ((2 * rev + 1) * galois_element) & mask;
  return __brev((image - 1) >> 1) >> (32 - log_n);
}

}  // namespace fhelium::cuda
