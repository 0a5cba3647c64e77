// What the kernels that run ModUp's forward tile pass and the inner product
// in one launch read: the cluster kernel of keyswitch.cu (2^11..2^14) and
// the digit-looped kernel of digit_tile_inner_product.cuh (2^16), and the
// slot helpers every key-switching kernel shares (device code only).
#pragma once

#include "device_types.hpp"

namespace fhelium::cuda::kernels {

struct TileInnerProduct {
  const u64* extended;  // digits x slots x n, forward column stages done
  const u64* d;         // the digits' own limbs, NTT form
  const u64* key;
  u64* accumulators;    // 2 x slots x n
  const DevPrime* primes;
  u32 n;
  u32 galois_element;   // d is read through X -> X^g unless 0
  int log_n;
  int level;
  int max_level;
  int slots;
  int key_limbs;
  int slot_begin;       // block (tile, y, ...) computes slot slot_begin + y
};

// The key limb (prime index) of accumulator slot s at `level`: Q prime s for
// s <= level, else P prime s - level - 1.
__device__ __forceinline__ int key_limb_of_slot(int slot, int level, int max_level) {
  return slot <= level ? slot : max_level + 1 + (slot - level - 1);
}

// Whether slot s is one of digit j's own primes (read from d, not extended).
__device__ __forceinline__ bool own_slot_of_digit(int s, int j, int alpha, int level) {
  const int begin = j * alpha;
  return s >= begin && s < (begin + alpha < level + 1 ? begin + alpha : level + 1);
}

}  // namespace fhelium::cuda::kernels
