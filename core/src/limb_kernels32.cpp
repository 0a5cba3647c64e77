// The limb loops in 32-bit words. Each is written once as plain C++ and
// compiled twice, portable and for AVX2 (eight lanes, vectorized by the
// compiler); integer arithmetic, so both give the same residues.
#include <algorithm>

#include "fhelium/backend/limb_kernels.hpp"
#include "limb_kernels32.hpp"
#include "ntt_kernels.hpp"

namespace fhelium {
namespace {

#define FHELIUM_LOOP [[gnu::always_inline]] inline

// a + b and a - b mod q for a, b < q < 2^31 (no overflow in 32 bits).
FHELIUM_LOOP u32 add32(u32 a, u32 b, u32 q) {
  const u32 s = a + b;
  return s >= q ? s - q : s;
}
FHELIUM_LOOP u32 sub32(u32 a, u32 b, u32 q) {
  const u32 d = a - b;
  return a >= b ? d : d + q;
}

FHELIUM_LOOP void add_loop(const u32* x, const u32* y, u32* out, std::size_t n, u32 q) {
  for (std::size_t k = 0; k < n; ++k) out[k] = add32(x[k], y[k], q);
}
FHELIUM_LOOP void subtract_loop(const u32* x, const u32* y, u32* out, std::size_t n, u32 q) {
  for (std::size_t k = 0; k < n; ++k) out[k] = sub32(x[k], y[k], q);
}
FHELIUM_LOOP void multiply_loop(const u32* x, const u32* y, u32* out, std::size_t n, const NarrowModulus& q) {
  for (std::size_t k = 0; k < n; ++k) out[k] = reduce_narrow(u64{x[k]} * y[k], q);
}
// a0 b1 + a1 b0 < 2^63: one reduction.
FHELIUM_LOOP void cross_loop(const u32* a0, const u32* b1, const u32* a1, const u32* b0, u32* out, std::size_t n,
                             const NarrowModulus& q) {
  for (std::size_t k = 0; k < n; ++k) out[k] = reduce_narrow(u64{a0[k]} * b1[k] + u64{a1[k]} * b0[k], q);
}
FHELIUM_LOOP void difference_loop(const u32* x, const u32* y, u32* out, std::size_t n, u32 w, u32 w_shoup, u32 q,
                                  const u32* add) {
  if (add) {
    for (std::size_t k = 0; k < n; ++k) out[k] = add32(mul_shoup(sub32(x[k], y[k], q), w, w_shoup, q), add[k], q);
  } else {
    for (std::size_t k = 0; k < n; ++k) out[k] = mul_shoup(sub32(x[k], y[k], q), w, w_shoup, q);
  }
}

// Each loop compiled for AVX2 and portably; the functions below pick one.
#define FHELIUM_BOTH(name, params, args)                                     \
  __attribute__((target("avx2"))) void name##_avx2 params { name args; }     \
  void name##_portable params { name args; }

FHELIUM_BOTH(add_loop, (const u32* x, const u32* y, u32* out, std::size_t n, u32 q), (x, y, out, n, q))
FHELIUM_BOTH(subtract_loop, (const u32* x, const u32* y, u32* out, std::size_t n, u32 q), (x, y, out, n, q))
FHELIUM_BOTH(multiply_loop, (const u32* x, const u32* y, u32* out, std::size_t n, const NarrowModulus& q),
             (x, y, out, n, q))
FHELIUM_BOTH(cross_loop,
             (const u32* a0, const u32* b1, const u32* a1, const u32* b0, u32* out, std::size_t n,
              const NarrowModulus& q),
             (a0, b1, a1, b0, out, n, q))
FHELIUM_BOTH(difference_loop,
             (const u32* x, const u32* y, u32* out, std::size_t n, u32 w, u32 w_shoup, u32 q, const u32* add),
             (x, y, out, n, w, w_shoup, q, add))

}  // namespace

void add_residues(const u32* x, const u32* y, u32* out, std::size_t n, u32 q) {
  (detail::cpu_has_avx2() ? add_loop_avx2 : add_loop_portable)(x, y, out, n, q);
}

void subtract_residues(const u32* x, const u32* y, u32* out, std::size_t n, u32 q) {
  (detail::cpu_has_avx2() ? subtract_loop_avx2 : subtract_loop_portable)(x, y, out, n, q);
}

void multiply_residues(const u32* x, const u32* y, u32* out, std::size_t n, const NarrowModulus& q) {
  (detail::cpu_has_avx2() ? multiply_loop_avx2 : multiply_loop_portable)(x, y, out, n, q);
}

void multiply_cross(const u32* a0, const u32* b1, const u32* a1, const u32* b0, u32* out, std::size_t n,
                    const NarrowModulus& q) {
  (detail::cpu_has_avx2() ? cross_loop_avx2 : cross_loop_portable)(a0, b1, a1, b0, out, n, q);
}

void multiply_difference(const u32* x, const u32* y, u32* out, std::size_t n, u32 w, u32 w_shoup, u32 q,
                         const u32* add) {
  (detail::cpu_has_avx2() ? difference_loop_avx2 : difference_loop_portable)(x, y, out, n, w, w_shoup, q, add);
}

// Products of residues below 2^31 are added in 64-bit words and folded every
// third digit (three stay below 2^64).
void multiply_accumulate(const u32* const* x, const u32* const* kb, const u32* const* ka, int digits,
                         const std::uint32_t* perm, std::size_t n, const NarrowModulus& q, u32* acc0, u32* acc1) {
  if (detail::cpu_has_avx2() && n % 8 == 0) {
    detail::multiply_accumulate_avx2(x, kb, ka, digits, perm, n, q, acc0, acc1);
  } else {
    multiply_accumulate_scalar(x, kb, ka, digits, perm, n, q, acc0, acc1);
  }
}

void multiply_accumulate_scalar(const u32* const* x, const u32* const* kb, const u32* const* ka, int digits,
                                const std::uint32_t* perm, std::size_t n, const NarrowModulus& q, u32* acc0,
                                u32* acc1) {
  constexpr std::size_t block = 512;
  u64 sum0[block];
  u64 sum1[block];
  for (std::size_t k0 = 0; k0 < n; k0 += block) {
    const std::size_t len = std::min(block, n - k0);
    std::fill_n(sum0, len, u64{0});
    std::fill_n(sum1, len, u64{0});
    for (int j = 0; j < digits; ++j) {
      const auto d = static_cast<std::size_t>(j);
      for (std::size_t k = 0; k < len; ++k) {
        const u64 e = x[d][perm ? perm[k0 + k] : k0 + k];
        sum0[k] += e * kb[d][k0 + k];
        sum1[k] += e * ka[d][k0 + k];
      }
      if (j % 3 == 2 && j + 1 < digits) {
        for (std::size_t k = 0; k < len; ++k) {
          sum0[k] = reduce_narrow(sum0[k], q);
          sum1[k] = reduce_narrow(sum1[k], q);
        }
      }
    }
    for (std::size_t k = 0; k < len; ++k) {
      acc0[k0 + k] = reduce_narrow(sum0[k], q);
      acc1[k0 + k] = reduce_narrow(sum1[k], q);
    }
  }
}

}  // namespace fhelium
