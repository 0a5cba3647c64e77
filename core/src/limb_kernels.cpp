#include "fhelium/backend/limb_kernels.hpp"

#include <bit>

#include "avx2_lanes.hpp"
#include "ntt_kernels.hpp"

namespace fhelium {
namespace {

using namespace detail::avx2;

// The scalar loops also finish the AVX2 ones' last n % 4 residues.
void reduce_subtract_scalar(const u64* t, u64* out, std::size_t begin, std::size_t end, const Modulus& q, u64 c) {
  for (std::size_t k = begin; k < end; ++k) out[k] = sub_mod(reduce64(t[k], q), c, q.value);
}

void multiply_difference_scalar(const u64* x, const u64* y, u64* out, std::size_t begin, std::size_t end, u64 w,
                                u64 w_shoup, u64 q, const u64* add) {
  for (std::size_t k = begin; k < end; ++k) {
    const u64 r = mul_shoup(sub_mod(x[k], y[k], q), w, w_shoup, q);
    out[k] = add ? add_mod(r, add[k], q) : r;
  }
}

void multiply_residues_scalar(const u64* x, const u64* y, u64* out, std::size_t begin, std::size_t end,
                              const Modulus& q) {
  for (std::size_t k = begin; k < end; ++k) out[k] = mul_mod(x[k], y[k], q);
}

template <bool subtract>
void add_scalar(const u64* x, const u64* y, u64* out, std::size_t begin, std::size_t end, u64 q) {
  for (std::size_t k = begin; k < end; ++k) out[k] = subtract ? sub_mod(x[k], y[k], q) : add_mod(x[k], y[k], q);
}

// a - b mod q for a, b in [0, q).
FHELIUM_AVX2 __m256i sub_mod_lanes(__m256i a, __m256i b, const Lanes& l) {
  return subtract_if_at_least(_mm256_add_epi64(_mm256_sub_epi64(a, b), l.q_v), l.q_v, l.q_minus_one);
}

template <bool subtract>
__attribute__((target("avx2"))) void add_avx2(const u64* x, const u64* y, u64* out, std::size_t n, u64 q) {
  const Lanes l = lanes_for(q);
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    const __m256i a = load(x + k), b = load(y + k);
    store(out + k, subtract ? sub_mod_lanes(a, b, l)
                            : subtract_if_at_least(_mm256_add_epi64(a, b), l.q_v, l.q_minus_one));
  }
  add_scalar<subtract>(x, y, out, vector_end, n, q);
}

// x mod q for x < 2^62, with ratio = floor(2^64 / q) (Modulus::ratio_hi): the
// quotient estimate is at most 3 short (one for the constant, two for
// mulhi_approx), so x - quotient q < 4q.
FHELIUM_AVX2 __m256i reduce_lanes(__m256i x, const Constant& ratio, const Lanes& l) {
  const __m256i r = _mm256_sub_epi64(x, mullo(mulhi_approx(x, ratio), l.q));
  return subtract_if_at_least(subtract_if_at_least(r, l.two_q, l.two_q_minus_one), l.q_v, l.q_minus_one);
}

__attribute__((target("avx2"))) void reduce_subtract_avx2(const u64* t, u64* out, std::size_t n, const Modulus& q,
                                                          u64 c) {
  const Lanes l = lanes_for(q.value);
  const Constant ratio = broadcast(q.ratio_hi);
  const __m256i c_v = _mm256_set1_epi64x(static_cast<long long>(c));
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    store(out + k, sub_mod_lanes(reduce_lanes(load(t + k), ratio, l), c_v, l));
  }
  reduce_subtract_scalar(t, out, vector_end, n, q, c);
}

template <bool with_add>
__attribute__((target("avx2"))) void multiply_difference_avx2(const u64* x, const u64* y, u64* out, std::size_t n,
                                                              u64 w, u64 w_shoup, u64 q, const u64* add) {
  const Lanes l = lanes_for(q);
  const Constant w_v = broadcast(w), w_shoup_v = broadcast(w_shoup);
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    const __m256i d = sub_mod_lanes(load(x + k), load(y + k), l);
    __m256i r = subtract_if_at_least(mul_shoup_lazy(d, w_v, w_shoup_v, l), l.q_v, l.q_minus_one);
    if constexpr (with_add) r = subtract_if_at_least(_mm256_add_epi64(r, load(add + k)), l.q_v, l.q_minus_one);
    store(out + k, r);
  }
  multiply_difference_scalar(x, y, out, vector_end, n, w, w_shoup, q, add);
}

// Barrett with a 64-bit constant (HAC 14.42 scaled to a 64-bit high
// multiply): for q of b bits and z < 2^(2b + 1), top = z >> (b - 1) < 2^63
// and mu = floor(2^(63 + b) / q) give floor(top mu / 2^64) at most 2 below
// floor(z / q), so z - quotient q < 3q < 2^63.
struct WideReducer {
  Lanes l;
  Constant mu;
  __m128i low_shift, high_shift;
};

FHELIUM_AVX2 WideReducer wide_reducer(u64 q) {
  const auto bits = static_cast<int>(std::bit_width(q));
  return {lanes_for(q), broadcast(static_cast<u64>((u128{1} << (63 + bits)) / q)), _mm_cvtsi32_si128(bits - 1),
          _mm_cvtsi32_si128(65 - bits)};
}

FHELIUM_AVX2 __m256i reduce_wide(__m256i high, __m256i low, const WideReducer& w) {
  const __m256i top = _mm256_or_si256(_mm256_srl_epi64(low, w.low_shift), _mm256_sll_epi64(high, w.high_shift));
  const __m256i r = _mm256_sub_epi64(low, mullo(mulhi(top, w.mu), w.l.q));
  return subtract_if_at_least(subtract_if_at_least(r, w.l.two_q, w.l.two_q_minus_one), w.l.q_v, w.l.q_minus_one);
}

__attribute__((target("avx2"))) void multiply_residues_avx2(const u64* x, const u64* y, u64* out, std::size_t n,
                                                            const Modulus& q) {
  const WideReducer w = wide_reducer(q.value);
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    __m256i high, low;
    multiply_wide(load(x + k), load(y + k), high, low);
    store(out + k, reduce_wide(high, low, w));
  }
  multiply_residues_scalar(x, y, out, vector_end, n, q);
}

void multiply_cross_scalar(const u64* a0, const u64* b1, const u64* a1, const u64* b0, u64* out, std::size_t begin,
                           std::size_t end, const Modulus& q) {
  for (std::size_t k = begin; k < end; ++k) {
    out[k] = reduce128(static_cast<u128>(a0[k]) * b1[k] + static_cast<u128>(a1[k]) * b0[k], q);
  }
}

__attribute__((target("avx2"))) void multiply_cross_avx2(const u64* a0, const u64* b1, const u64* a1, const u64* b0,
                                                         u64* out, std::size_t n, const Modulus& q) {
  const WideReducer w = wide_reducer(q.value);
  const __m256i sign = _mm256_set1_epi64x(static_cast<long long>(u64{1} << 63));
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    __m256i high0, low0, high1, low1;
    multiply_wide(load(a0 + k), load(b1 + k), high0, low0);
    multiply_wide(load(a1 + k), load(b0 + k), high1, low1);
    const __m256i low = _mm256_add_epi64(low0, low1);
    // Carry where low < low0 (unsigned: compare with the sign bits flipped).
    const __m256i carry = _mm256_cmpgt_epi64(_mm256_xor_si256(low0, sign), _mm256_xor_si256(low, sign));
    const __m256i high = _mm256_sub_epi64(_mm256_add_epi64(high0, high1), carry);
    store(out + k, reduce_wide(high, low, w));
  }
  multiply_cross_scalar(a0, b1, a1, b0, out, vector_end, n, q);
}

void lift_centered_scalar(const u64* in, u64* out, std::size_t begin, std::size_t end, u64 a0, const Modulus& b,
                          u64 a0_mod_b) {
  for (std::size_t k = begin; k < end; ++k) {
    const u64 r = reduce64(in[k], b);
    out[k] = in[k] > (a0 - 1) / 2 ? sub_mod(r, a0_mod_b, b.value) : r;
  }
}

template <bool below_two_b>
__attribute__((target("avx2"))) void lift_centered_avx2(const u64* in, u64* out, std::size_t n, u64 a0,
                                                        const Modulus& b, u64 a0_mod_b) {
  const Lanes l = lanes_for(b.value);
  const Constant ratio = broadcast(b.ratio_hi);
  const __m256i half = _mm256_set1_epi64x(static_cast<long long>((a0 - 1) / 2));
  const __m256i minus = _mm256_set1_epi64x(static_cast<long long>(a0_mod_b));
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    const __m256i x = load(in + k);
    const __m256i r = below_two_b ? subtract_if_at_least(x, l.q_v, l.q_minus_one) : reduce_lanes(x, ratio, l);
    store(out + k, _mm256_blendv_epi8(r, sub_mod_lanes(r, minus, l), _mm256_cmpgt_epi64(x, half)));
  }
  lift_centered_scalar(in, out, vector_end, n, a0, b, a0_mod_b);
}

}  // namespace

void lift_centered(const u64* in, u64* out, std::size_t n, u64 a0, const Modulus& b, u64 a0_mod_b) {
  if (!detail::use_avx2(b.value) || a0 >= (u64{1} << 62)) {
    lift_centered_scalar(in, out, 0, n, a0, b, a0_mod_b);
  } else if (a0 < 2 * b.value) {  // x < 2b: one conditional subtraction reduces it
    lift_centered_avx2<true>(in, out, n, a0, b, a0_mod_b);
  } else {
    lift_centered_avx2<false>(in, out, n, a0, b, a0_mod_b);
  }
}

void multiply_residues(const u64* x, const u64* y, u64* out, std::size_t n, const Modulus& q) {
  if (detail::use_avx2(q.value)) {
    multiply_residues_avx2(x, y, out, n, q);
  } else {
    multiply_residues_scalar(x, y, out, 0, n, q);
  }
}

void add_residues(const u64* x, const u64* y, u64* out, std::size_t n, u64 q) {
  if (detail::use_avx2(q)) {
    add_avx2<false>(x, y, out, n, q);
  } else {
    add_scalar<false>(x, y, out, 0, n, q);
  }
}

void subtract_residues(const u64* x, const u64* y, u64* out, std::size_t n, u64 q) {
  if (detail::use_avx2(q)) {
    add_avx2<true>(x, y, out, n, q);
  } else {
    add_scalar<true>(x, y, out, 0, n, q);
  }
}

void multiply_cross(const u64* a0, const u64* b1, const u64* a1, const u64* b0, u64* out, std::size_t n,
                    const Modulus& q) {
  if (detail::use_avx2(q.value)) {
    multiply_cross_avx2(a0, b1, a1, b0, out, n, q);
  } else {
    multiply_cross_scalar(a0, b1, a1, b0, out, 0, n, q);
  }
}

void reduce_subtract(const u64* t, u64* out, std::size_t n, const Modulus& q, u64 c) {
  if (detail::use_avx2(q.value)) {
    reduce_subtract_avx2(t, out, n, q, c);
  } else {
    reduce_subtract_scalar(t, out, 0, n, q, c);
  }
}

void multiply_difference(const u64* x, const u64* y, u64* out, std::size_t n, u64 w, u64 w_shoup, u64 q,
                         const u64* add) {
  if (!detail::use_avx2(q)) {
    multiply_difference_scalar(x, y, out, 0, n, w, w_shoup, q, add);
  } else if (add) {
    multiply_difference_avx2<true>(x, y, out, n, w, w_shoup, q, add);
  } else {
    multiply_difference_avx2<false>(x, y, out, n, w, w_shoup, q, nullptr);
  }
}

}  // namespace fhelium
