// Host-side entry points of the CUDA kernels (one .cu file per family). Each
// function enqueues work on `stream`, checks every launch, and never
// synchronises or allocates.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "device_types.hpp"

namespace fhelium::cuda::kernels {

// A polynomial array in device memory: components x limbs x n, limb-major;
// limb i uses key limb i (the Q primes).
struct Poly {
  u64* data = nullptr;
  int components = 0;
  int limbs = 0;
};

// What every launch needs to know about the context.
struct Launch {
  cudaStream_t stream;
  NttTables tables;  // tables.primes: the primes by key limb
  u32 n;
  int max_level;     // L: key limbs 0..L are Q primes, L+1.. are P primes
};

// ---- element-wise (elementwise.cu) ----
void add(const Launch& l, Poly out, Poly a, Poly b);
void sub(const Launch& l, Poly out, Poly a, Poly b);
void negate(const Launch& l, Poly out, Poly a);
// residues: one per limb of out.
void add_constant(const Launch& l, Poly out, Poly a, std::span<const u64> residues, bool ntt_domain);
void multiply_constant(const Launch& l, Poly out, Poly a, std::span<const u64> residues,
                       std::span<const u64> residues_shoup);
void multiply_plain(const Launch& l, Poly out, Poly a, Poly p);
void multiply(const Launch& l, Poly out, Poly a, Poly b);
// (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0): multiply's first two components.
void multiply_linear(const Launch& l, Poly out, Poly a, Poly b);
// The first out.limbs limbs of every component of a.
void copy_limbs(const Launch& l, Poly out, Poly a);

// ---- transforms (ntt.cu) ----
void to_ntt(const Launch& l, Poly out, Poly a);
void to_coefficient(const Launch& l, Poly out, Poly a);

// ---- rescale (rescale.cu) ----
// a has out.limbs + 1 limbs; temp holds a.components x n words.
void rescale(const Launch& l, const RescaleView& tables, Poly out, Poly a, u64* temp);

// ---- key switching (keyswitch.cu) ----
struct KeySwitchWork {
  u64* coefficients;  // (L + 1) x n
  u64* extended;      // digits x (L + 1 + K) x n at the top level
  u64* accumulators;  // 2 x (L + 1 + K) x n
  u64* converted;     // 2 x (L + 1) x n
};

// The second components a1, b1 (level + 1 limbs each, NTT domain) of a
// multiply + relinearize: key switching takes d = a1 b1, computed as ModUp's
// first kernel loads it and stored to `d2` (level + 1 limbs) for the inner
// product, which reads d = d2.
struct Tensor {
  const u64* a1;
  const u64* b1;
  u64* d2;
};

// Extends d (NTT domain, level + 1 limbs; read through X -> X^g unless
// galois_element is 0) to every digit's other primes (into work.extended).
// With a tensor, d is tensor->d2 and galois_element 0.
void mod_up(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d, u32 galois_element,
            const Tensor* tensor = nullptr);
// work.accumulators = sum over digits of extended_j times the key's digit j.
// The digits' own limbs are read from d (level + 1 limbs, NTT domain). The
// extended digits are read through X -> X^extended_galois and d through
// X -> X^own_galois, unless the element is 0 (both nonzero: the same element).
void inner_product(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                   const u64* key, u32 extended_galois, u32 own_galois);
// mod_up(d, galois_element) then inner_product(d, key, 0, galois_element) in
// three launches (the forward tile pass and the inner product fused), when
// the shape allows (one prime per digit, at most 8 digits, 2^11..2^15);
// returns false, having launched nothing, otherwise.
bool mod_up_inner_product(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                          const u64* key, u32 galois_element, const Tensor* tensor = nullptr);
// out_c = ModDown(accumulator_c) + add_c, c = 0, 1 (add_c may be null; add0
// is read through the automorphism of add0_galois unless it is 0).
void mod_down(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, u64* out0, const u64* add0,
              u32 add0_galois, u64* out1, const u64* add1);

}  // namespace fhelium::cuda::kernels
