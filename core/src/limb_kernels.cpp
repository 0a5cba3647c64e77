#include "fhelium/limb_kernels.hpp"

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
                                u64 w_shoup, u64 q) {
  for (std::size_t k = begin; k < end; ++k) out[k] = mul_shoup(sub_mod(x[k], y[k], q), w, w_shoup, q);
}

// a - b mod q for a, b in [0, q).
FHELIUM_AVX2 __m256i sub_mod_lanes(__m256i a, __m256i b, const Lanes& l) {
  return subtract_if_at_least(_mm256_add_epi64(_mm256_sub_epi64(a, b), l.q_v), l.q_v, l.q_minus_one);
}

__attribute__((target("avx2"))) void reduce_subtract_avx2(const u64* t, u64* out, std::size_t n, const Modulus& q,
                                                          u64 c) {
  const Lanes l = lanes_for(q.value);
  // floor(2^64 / q) (= ratio_hi) estimates t / q at most 3 short (one for the
  // constant, two for mulhi_approx): t - quotient q < 4q.
  const Constant ratio = broadcast(q.ratio_hi);
  const __m256i c_v = _mm256_set1_epi64x(static_cast<long long>(c));
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    const __m256i x = load(t + k);
    __m256i r = _mm256_sub_epi64(x, mullo(mulhi_approx(x, ratio), l.q));
    r = subtract_if_at_least(subtract_if_at_least(r, l.two_q, l.two_q_minus_one), l.q_v, l.q_minus_one);
    store(out + k, sub_mod_lanes(r, c_v, l));
  }
  reduce_subtract_scalar(t, out, vector_end, n, q, c);
}

__attribute__((target("avx2"))) void multiply_difference_avx2(const u64* x, const u64* y, u64* out, std::size_t n,
                                                              u64 w, u64 w_shoup, u64 q) {
  const Lanes l = lanes_for(q);
  const Constant w_v = broadcast(w), w_shoup_v = broadcast(w_shoup);
  const std::size_t vector_end = n - n % 4;
  for (std::size_t k = 0; k < vector_end; k += 4) {
    const __m256i d = sub_mod_lanes(load(x + k), load(y + k), l);
    store(out + k, subtract_if_at_least(mul_shoup_lazy(d, w_v, w_shoup_v, l), l.q_v, l.q_minus_one));
  }
  multiply_difference_scalar(x, y, out, vector_end, n, w, w_shoup, q);
}

}  // namespace

void reduce_subtract(const u64* t, u64* out, std::size_t n, const Modulus& q, u64 c) {
  if (detail::cpu_has_avx2()) {
    reduce_subtract_avx2(t, out, n, q, c);
  } else {
    reduce_subtract_scalar(t, out, 0, n, q, c);
  }
}

void multiply_difference(const u64* x, const u64* y, u64* out, std::size_t n, u64 w, u64 w_shoup, u64 q) {
  if (detail::cpu_has_avx2()) {
    multiply_difference_avx2(x, y, out, n, w, w_shoup, q);
  } else {
    multiply_difference_scalar(x, y, out, 0, n, w, w_shoup, q);
  }
}

}  // namespace fhelium
