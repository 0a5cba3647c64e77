// Plain structs shared by host code and kernels: views of the tables a
// CudaContext uploads once in prepare(). All pointers are device pointers.
#pragma once

#include <cstdint>

namespace fhelium::cuda {

using u64 = std::uint64_t;
using u32 = std::uint32_t;

// One prime of the key basis (Q primes 0..L, then P primes) with its Barrett
// constant floor(2^128 / q), the NTT's n^-1 and the bits of the double 1 / q.
struct DevPrime {
  u64 value;
  u64 ratio_lo;
  u64 ratio_hi;
  u64 inv_n;
  u64 inv_n_shoup;
  u64 inverse_bits;
};

// A twiddle and its Shoup constant, read with one 16-byte load.
struct alignas(16) TwiddlePair {
  u64 w;
  u64 w_shoup;
};

// NTT tables for every key limb, N pairs per limb, in NttTable's order, and
// the same roots as doubles for the double-precision path (primes below
// fp_limit).
struct NttTables {
  const TwiddlePair* roots;
  const TwiddlePair* inv_roots;
  const DevPrime* primes;  // per key limb
  int log_n;
  const double* roots_fp;
  const double* inv_roots_fp;
  u64 fp_limit;
};

// A BasisConverter (A -> B) as the kernels read it.
struct ConverterView {
  int from_count;                  // |A|
  int to_count;                    // |B|
  const u64* from_value;           // a_i
  const u64* hat_inverse;          // [(A/a_i)^-1]_{a_i}
  const u64* hat_inverse_shoup;
  const u64* inverse_double_bits;  // bits of the double 1.0 / a_i
  const u64* hat_mod_to;           // [A/a_i]_{b_j} at j*|A|+i
  const u64* hat_mod_to_shoup;     // Shoup constants of hat_mod_to modulo b_j
  const u64* overflow_mod_to;      // [v A]_{b_j} at j*(|A|+1)+v
  const u64* to_key_limb;          // key limb of b_j (index into DevPrime tables)
};

// Hybrid key-switching tables of one level l.
struct KeySwitchView {
  int level;
  int digits;
  int alpha;                        // Q primes per digit (the special count)
  int specials;
  const ConverterView* mod_up;      // per digit
  ConverterView mod_down;           // P -> Q_l
  const u64* p_inverse;             // [P^-1]_{q_i}, i <= l
  const u64* p_inverse_shoup;
  // Limbs of the level's extended basis Q_l P.
  int slots() const { return level + 1 + specials; }
};

// Rescale tables from level l to l - 1.
struct RescaleView {
  u64 q_last;                       // the dropped prime
  const u64* last_inverse;          // [q_l^-1]_{q_i}, i < l
  const u64* last_inverse_shoup;
  const u64* half_last;             // [floor(q_l / 2)]_{q_i}
};

}  // namespace fhelium::cuda
