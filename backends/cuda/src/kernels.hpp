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
  int max_level;  // L: key limbs 0..L are Q primes, L+1.. are P primes
  // The same launch on another stream.
  Launch on(cudaStream_t other) const {
    Launch l = *this;
    l.stream = other;
    return l;
  }
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
// out = a_0 p_0 + a_1 p_1 + ..., or a_0 + a_1 + ... when p is empty
// (Backend::sum_products); out is none of the operands.
void sum_products(const Launch& l, Poly out, std::span<const Poly> a, std::span<const Poly> p);
// out = a_0 r_0 + a_1 r_1 + ..., r holding out.limbs residues per term
// (Backend::sum_constant_products); out is none of the operands.
void sum_constant_products(const Launch& l, Poly out, std::span<const Poly> a, std::span<const u64> r);
// Backend::sum_product_groups for two-component outputs whose groups have
// at most one term per ciphertext (one_term_per_input).
void sum_product_groups(const Launch& l, std::span<const Poly> outs, std::span<const Poly> a, std::span<const Poly> p,
                        std::span<const std::size_t> ends);
void multiply(const Launch& l, Poly out, Poly a, Poly b);
// (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0): multiply's first two components.
void multiply_linear(const Launch& l, Poly out, Poly a, Poly b);
// The first out.limbs limbs of every component of a.
void copy_limbs(const Launch& l, Poly out, Poly a);
// ModRaise: a has one limb (q_0, coefficient domain); every limb of out gets
// its centered lift.
void mod_raise(const Launch& l, Poly out, Poly a);

// ---- transforms (ntt.cu) ----
void to_ntt(const Launch& l, Poly out, Poly a);
void to_coefficient(const Launch& l, Poly out, Poly a);
// ntt::TileRows::by_prime_limbs for a tile pass over `components` x `limbs`
// limbs (a value's transforms, rescale, ModDown): `limbs` for two
// components (rows by prime), else 0 (limb order).
int tile_rows_by_prime(int components, int limbs);

// ---- rescale (rescale.cu) ----
// a has out.limbs + 1 limbs; temp holds a.components x n words.
void rescale(const Launch& l, const RescaleView& tables, Poly out, Poly a, u64* temp);

// ---- key switching (keyswitch.cu) ----
struct KeySwitchWork {
  u64* coefficients;  // (L + 1) x n
  u64* extended;      // digits x (L + 1 + K) x n at the top level
  u64* accumulators;  // 2 x (L + 1 + K) x n
  u64* converted;     // 2 x (L + 1) x n
  u64* product;       // (L + 1) x n: d = a1 b1 of a multiply + relinearize (null where not fused)
};

// A second stream for work beside the main stream's within one operation.
// fork(main): `stream` waits for main's work so far; join(main): main waits
// for `stream`'s work so far. Capturable: the side stream joins a capture of
// main through the fork (join only after a fork), and a kernel node keeps
// its stream's priority.
struct SideStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t fork_event = nullptr;
  cudaEvent_t join_event = nullptr;
  void fork(cudaStream_t main) const;
  void join(cudaStream_t main) const;
};

// The second components a1, b1 (level + 1 limbs each, NTT domain) of a
// multiply + relinearize: key switching takes d = a1 b1, computed as ModUp's
// first kernel loads it and stored to work.product for the inner product.
struct Tensor {
  const u64* a1;
  const u64* b1;
};

// Where ModDown puts a key switch's result: out_c = ModDown(accumulator_c)
// + add_c, c = 0, 1 (add_c may be null; add0 is read through
// X -> X^add0_galois unless that is 0, and may be out0 only then; add1 may
// be out1).
struct KeySwitchOutput {
  u64* out0;
  const u64* add0;
  u32 add0_galois;
  u64* out1;
  const u64* add1;
};

// A rescale by q_l after a key switch at level l >= 1, fused into its
// ModDown: out_c = rescale(ModDown(accumulator_c) + add_c), l limbs, the
// residues of the two calls. add_c (l + 1 limbs) is not null, is read
// without a permutation, and aliases no output. temp: 2 x n words.
struct RescaleAfter {
  RescaleView tables;  // of level l
  u64* temp;
};
// Whether key_switch takes a RescaleAfter at ks's level: ModDown's general
// path (several special primes, or degrees without a fused column pass).
bool fuses_rescale(const Launch& l, const KeySwitchView& ks);

// Key switching of d (level + 1 limbs, NTT domain, read through X -> X^g
// unless galois_element is 0; with a tensor, d = a1 b1 and galois_element
// 0): ModUp, the inner product with `key`, ModDown into `out` (and a
// rescale with it, where `rescale` is not null). The part that needs only
// the P slots (their inner product, ModDown's transform of them) runs on
// side.stream beside the Q slots' inner product, and is joined before
// ModDown's final NTT.
void key_switch(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d, u32 galois_element,
                const u64* key, const KeySwitchOutput& out, const SideStream& side, const Tensor* tensor = nullptr,
                const RescaleAfter* rescale = nullptr);

// A hoisted rotation's first half: d (NTT domain, level + 1 limbs) extended
// to every digit's other primes, in NTT form (into work.extended).
void mod_up(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d);
// Its second half, once per rotation: the inner product of the extended
// digits and of d, both read through X -> X^galois_element, with `key`,
// then ModDown into `out`, on l.stream (the P slots' part on side->stream,
// as key_switch, unless side is null). Rotations of one batch may run on
// different streams, each with its own work.accumulators and work.converted.
void rotate_extended(const Launch& l, const KeySwitchView& ks, const KeySwitchWork& work, const u64* d,
                     u32 galois_element, const u64* key, const KeySwitchOutput& out, const SideStream* side);

}  // namespace fhelium::cuda::kernels
