// What the kernels that run ModUp's forward tile pass and the inner product
// in one launch read: the cluster kernel of keyswitch.cu (2^11..2^14) and
// the digit-looped kernel of digit_tile_inner_product.cuh (2^16).
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

}  // namespace fhelium::cuda::kernels
