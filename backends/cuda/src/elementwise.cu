// Element-wise kernels: two consecutive words per thread (16-byte accesses),
// blockIdx.y = component x limbs + limb, so a block reads its prime once.
#include <algorithm>

#include "cuda_check.hpp"
#include "kernels.hpp"
#include "modarith.cuh"
#include "term_chunks.hpp"
#include "word_pairs.cuh"

namespace fhelium::cuda::kernels {
namespace {

constexpr int threads = 256;
constexpr int max_constant_limbs = 64;  // per launch (kernel parameter space)

struct LimbConstants {
  u64 value[max_constant_limbs];
  u64 shoup[max_constant_limbs];
};

// The terms of one sum_products launch, by value.
using SumTerms = cuda::SumTerms<u64, 15>;
// 12 x 32 constants: 3 KB of the 4 KB of kernel parameters.
using ConstantTerms = cuda::ConstantTerms<u64, 12, 32>;

// 15 distinct ciphertexts (the 128-bit sums' bound) by 16 groups: 2.2 KB.
using GroupTerms = cuda::GroupTerms<u64, 15, 16>;
dim3 grid_for(u32 n, int rows) { return dim3(n / (2 * threads), static_cast<unsigned>(rows)); }

enum class BinaryOp { add, sub };

template <BinaryOp OP>
__global__ void __launch_bounds__(threads)
    binary_kernel(u64* out, const u64* a, const u64* b, u32 n, int limbs, int b_components, const DevPrime* primes) {
  const int row = static_cast<int>(blockIdx.y);
  const int component = row / limbs;
  const std::size_t at = static_cast<std::size_t>(row) * n + 2 * (blockIdx.x * threads + threadIdx.x);
  const ulonglong2 x = load_pair(a + at);
  if (component >= b_components) {
    store_pair(out + at, x);
    return;
  }
  const u64 q = primes[row % limbs].value;
  const ulonglong2 y = load_pair(b + at);
  if constexpr (OP == BinaryOp::add) {
    store_pair(out + at, make_ulonglong2(add_mod(x.x, y.x, q), add_mod(x.y, y.y, q)));
  } else {
    store_pair(out + at, make_ulonglong2(sub_mod(x.x, y.x, q), sub_mod(x.y, y.y, q)));
  }
}

__global__ void __launch_bounds__(threads) negate_kernel(u64* out, const u64* a, u32 n, int limbs, const DevPrime* primes) {
  const int row = static_cast<int>(blockIdx.y);
  const u64 q = primes[row % limbs].value;
  const std::size_t at = static_cast<std::size_t>(row) * n + 2 * (blockIdx.x * threads + threadIdx.x);
  const ulonglong2 x = load_pair(a + at);
  store_pair(out + at, make_ulonglong2(neg_mod(x.x, q), neg_mod(x.y, q)));
}

// Rows cover limbs [first, first + count) of every component.
__device__ __forceinline__ int row_of(int chunk_row, int count, int first, int limbs, int& limb, int& component) {
  component = chunk_row / count;
  limb = first + chunk_row % count;
  return component * limbs + limb;
}

__global__ void __launch_bounds__(threads)
    add_constant_kernel(u64* out, const u64* a, u32 n, int limbs, int first, int count, LimbConstants c, bool ntt_domain,
                        const DevPrime* primes) {
  int limb = 0;
  int component = 0;
  const int row = row_of(static_cast<int>(blockIdx.y), count, first, limbs, limb, component);
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t at = static_cast<std::size_t>(row) * n + k;
  ulonglong2 x = load_pair(a + at);
  if (component == 0) {
    const u64 q = primes[limb].value;
    const u64 r = c.value[limb - first];
    if (ntt_domain) {
      x.x = add_mod(x.x, r, q);
      x.y = add_mod(x.y, r, q);
    } else if (k == 0) {
      x.x = add_mod(x.x, r, q);
    }
  }
  store_pair(out + at, x);
}

__global__ void __launch_bounds__(threads)
    multiply_constant_kernel(u64* out, const u64* a, u32 n, int limbs, int first, int count, LimbConstants c,
                             const DevPrime* primes) {
  int limb = 0;
  int component = 0;
  const int row = row_of(static_cast<int>(blockIdx.y), count, first, limbs, limb, component);
  const std::size_t at = static_cast<std::size_t>(row) * n + 2 * (blockIdx.x * threads + threadIdx.x);
  const u64 q = primes[limb].value;
  const u64 w = c.value[limb - first];
  const u64 ws = c.shoup[limb - first];
  const ulonglong2 x = load_pair(a + at);
  store_pair(out + at, make_ulonglong2(mul_shoup(x.x, w, ws, q), mul_shoup(x.y, w, ws, q)));
}

__global__ void __launch_bounds__(threads)
    multiply_plain_kernel(u64* out, const u64* a, const u64* p, u32 n, int limbs, const DevPrime* primes) {
  const int row = static_cast<int>(blockIdx.y);
  const int limb = row % limbs;
  const DevPrime prime = primes[limb];
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t at = static_cast<std::size_t>(row) * n + k;
  const ulonglong2 x = load_pair(a + at);
  const ulonglong2 y = load_pair(p + static_cast<std::size_t>(limb) * n + k);
  store_pair(out + at, make_ulonglong2(mul_mod(x.x, y.x, prime), mul_mod(x.y, y.y, prime)));
}

// out = sum of a_i p_i (or of a_i when p[0] is null) over `count` terms, plus
// out itself when `accumulate` (a later chunk of terms): the products add up
// in 128 bits, count q^2 + q < 2^128 for q < 2^62, and one reduction per word.
// blockIdx.y = limb and a thread sums C components from `first`, so each
// plaintext residue is read once, not once per component.
template <int C>
__global__ void __launch_bounds__(threads) sum_products_kernel(u64* out, SumTerms terms, bool accumulate, u32 n,
                                                                int limbs, int first, const DevPrime* primes) {
  const int limb = static_cast<int>(blockIdx.y);
  const DevPrime prime = primes[limb];
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t plain_at = static_cast<std::size_t>(limb) * n + k;
  const std::size_t component_words = static_cast<std::size_t>(limbs) * n;
  std::size_t at[C];
  U128 x[C];
  U128 y[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    at[c] = (first + c) * component_words + plain_at;
    if (accumulate) {
      const ulonglong2 o = load_pair(out + at[c]);
      x[c].lo = o.x;
      y[c].lo = o.y;
    }
  }
  for (int t = 0; t < terms.count; ++t) {
    const ulonglong2 w = terms.p[0] ? load_pair(terms.p[t] + plain_at) : make_ulonglong2(1, 1);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const ulonglong2 v = load_pair(terms.a[t] + at[c]);
      mul_add(x[c], v.x, w.x);
      mul_add(y[c], v.y, w.y);
    }
  }
#pragma unroll
  for (int c = 0; c < C; ++c) store_pair(out + at[c], make_ulonglong2(reduce128(x[c], prime), reduce128(y[c], prime)));
}

// Every group's sum of products over a launch's D distinct ciphertexts, two
// components, plus what the output holds when `accumulate`: a thread reads
// its word of each ciphertext once (registers: D is a compile-time count)
// for all groups, and sums as sum_products_kernel does. One word per thread.
template <int D>
__global__ void __launch_bounds__(threads)
    sum_product_groups_kernel(GroupTerms terms, bool accumulate, u32 n, int limbs, const DevPrime* primes) {
  const int limb = static_cast<int>(blockIdx.y);
  const DevPrime prime = primes[limb];
  const std::size_t at = static_cast<std::size_t>(limb) * n + blockIdx.x * threads + threadIdx.x;
  const std::size_t second = static_cast<std::size_t>(limbs) * n + at;  // component 1
  u64 v0[D], v1[D];
#pragma unroll
  for (int d = 0; d < D; ++d) {
    v0[d] = terms.a[d][at];
    v1[d] = terms.a[d][second];
  }
  for (int g = 0; g < terms.groups; ++g) {
    U128 x{}, y{};
    u64* out = terms.out[g];
    if (accumulate) {
      x.lo = out[at];
      y.lo = out[second];
    }
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const u64* p = terms.p[g][d];
      if (p == nullptr) continue;
      const u64 w = p[at];
      mul_add(x, v0[d], w);
      mul_add(y, v1[d], w);
    }
    out[at] = reduce128(x, prime);
    out[second] = reduce128(y, prime);
  }
}

// out = sum of a_t r_t over a launch's terms at limbs [first, first +
// limbs) of every component, plus out itself when `accumulate`: 128-bit
// sums as in sum_products_kernel, one reduction per word.
__global__ void __launch_bounds__(threads) sum_constant_products_kernel(u64* out, ConstantTerms terms, bool accumulate,
                                                                         u32 n, int limbs, const DevPrime* primes) {
  const int row = static_cast<int>(blockIdx.y);
  const int j = row % terms.limbs;
  const int limb = terms.first + j;
  const DevPrime prime = primes[limb];
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t at = (static_cast<std::size_t>(row / terms.limbs) * limbs + limb) * n + k;
  U128 x;
  U128 y;
  if (accumulate) {
    const ulonglong2 o = load_pair(out + at);
    x.lo = o.x;
    y.lo = o.y;
  }
  for (int t = 0; t < terms.count; ++t) {
    const ulonglong2 v = load_pair(terms.a[t] + at);
    mul_add(x, v.x, terms.r[t][j]);
    mul_add(y, v.y, terms.r[t][j]);
  }
  store_pair(out + at, make_ulonglong2(reduce128(x, prime), reduce128(y, prime)));
}

// (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0, a1 b1), or without a1 b1
// when !THIRD (multiply_relinearize's part beside the key switch); blockIdx.y = limb.
template <bool THIRD>
__global__ void __launch_bounds__(threads)
    multiply_kernel(u64* out, const u64* a, const u64* b, u32 n, int limbs, int out_limbs, const DevPrime* primes) {
  const int limb = static_cast<int>(blockIdx.y);
  const DevPrime prime = primes[limb];
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t c0 = static_cast<std::size_t>(limb) * n + k;
  const std::size_t c1 = c0 + static_cast<std::size_t>(limbs) * n;
  const ulonglong2 a0 = load_pair(a + c0);
  const ulonglong2 a1 = load_pair(a + c1);
  const ulonglong2 b0 = load_pair(b + c0);
  const ulonglong2 b1 = load_pair(b + c1);
  const std::size_t o0 = static_cast<std::size_t>(limb) * n + k;
  const std::size_t o1 = o0 + static_cast<std::size_t>(out_limbs) * n;
  U128 x;
  U128 y;
  mul_add(x, a0.x, b1.x);
  mul_add(x, a1.x, b0.x);
  mul_add(y, a0.y, b1.y);
  mul_add(y, a1.y, b0.y);
  store_pair(out + o0, make_ulonglong2(mul_mod(a0.x, b0.x, prime), mul_mod(a0.y, b0.y, prime)));
  store_pair(out + o1, make_ulonglong2(reduce128(x, prime), reduce128(y, prime)));
  if constexpr (THIRD) {
    const std::size_t o2 = o1 + static_cast<std::size_t>(out_limbs) * n;
    store_pair(out + o2, make_ulonglong2(mul_mod(a1.x, b1.x, prime), mul_mod(a1.y, b1.y, prime)));
  }
}

template <class Kernel>
void per_limb_chunk(int limbs, const Kernel& kernel) {
  for (int first = 0; first < limbs; first += max_constant_limbs) kernel(first, std::min(max_constant_limbs, limbs - first));
}

}  // namespace

void add(const Launch& l, Poly out, Poly a, Poly b) {
  binary_kernel<BinaryOp::add><<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(
      out.data, a.data, b.data, l.n, out.limbs, b.components, l.tables.primes);
  check_launch("add");
}

void sub(const Launch& l, Poly out, Poly a, Poly b) {
  binary_kernel<BinaryOp::sub><<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(
      out.data, a.data, b.data, l.n, out.limbs, b.components, l.tables.primes);
  check_launch("sub");
}

void negate(const Launch& l, Poly out, Poly a) {
  negate_kernel<<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(out.data, a.data, l.n, out.limbs,
                                                                                     l.tables.primes);
  check_launch("negate");
}

void add_constant(const Launch& l, Poly out, Poly a, std::span<const u64> residues, bool ntt_domain) {
  per_limb_chunk(out.limbs, [&](int first, int count) {
    LimbConstants c{};
    std::copy_n(residues.begin() + first, count, c.value);
    add_constant_kernel<<<grid_for(l.n, out.components * count), threads, 0, l.stream>>>(
        out.data, a.data, l.n, out.limbs, first, count, c, ntt_domain, l.tables.primes);
    check_launch("add_constant");
  });
}

void multiply_constant(const Launch& l, Poly out, Poly a, std::span<const u64> residues,
                       std::span<const u64> residues_shoup) {
  per_limb_chunk(out.limbs, [&](int first, int count) {
    LimbConstants c{};
    std::copy_n(residues.begin() + first, count, c.value);
    std::copy_n(residues_shoup.begin() + first, count, c.shoup);
    multiply_constant_kernel<<<grid_for(l.n, out.components * count), threads, 0, l.stream>>>(
        out.data, a.data, l.n, out.limbs, first, count, c, l.tables.primes);
    check_launch("multiply_constant");
  });
}

void multiply_plain(const Launch& l, Poly out, Poly a, Poly p) {
  multiply_plain_kernel<<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(
      out.data, a.data, p.data, l.n, out.limbs, l.tables.primes);
  check_launch("multiply_plain");
}

void sum_products(const Launch& l, Poly out, std::span<const Poly> a, std::span<const Poly> p) {
  for_each_term_chunk<SumTerms>(a, p, [&](const SumTerms& terms, bool accumulate) {
    for_each_component_group(out.components, [&](auto group, int first) {
      sum_products_kernel<decltype(group)::value><<<grid_for(l.n, out.limbs), threads, 0, l.stream>>>(
          out.data, terms, accumulate, l.n, out.limbs, first, l.tables.primes);
      check_launch("sum_products");
    });
  });
}

void sum_constant_products(const Launch& l, Poly out, std::span<const Poly> a, std::span<const u64> r) {
  for_each_constant_chunk<ConstantTerms>(a, r, out.limbs, [&](const ConstantTerms& terms, bool accumulate) {
    sum_constant_products_kernel<<<grid_for(l.n, out.components * terms.limbs), threads, 0, l.stream>>>(
        out.data, terms, accumulate, l.n, out.limbs, l.tables.primes);
    check_launch("sum_constant_products");
  });
}

void sum_product_groups(const Launch& l, std::span<const Poly> outs, std::span<const Poly> a, std::span<const Poly> p,
                        std::span<const std::size_t> ends) {
  const dim3 grid(l.n / threads, static_cast<unsigned>(outs[0].limbs));
  for_each_group_chunk<GroupTerms>(outs, a, p, ends, [&](const GroupTerms& terms, bool accumulate) {
    with_count<1, GroupTerms::max_inputs>(terms.inputs, [&](auto inputs) {
      sum_product_groups_kernel<decltype(inputs)::value>
          <<<grid, threads, 0, l.stream>>>(terms, accumulate, l.n, outs[0].limbs, l.tables.primes);
      check_launch("sum_product_groups");
    });
  });
}

void multiply(const Launch& l, Poly out, Poly a, Poly b) {
  multiply_kernel<true><<<grid_for(l.n, out.limbs), threads, 0, l.stream>>>(out.data, a.data, b.data, l.n, a.limbs,
                                                                            out.limbs, l.tables.primes);
  check_launch("multiply");
}

void multiply_linear(const Launch& l, Poly out, Poly a, Poly b) {
  multiply_kernel<false><<<grid_for(l.n, out.limbs), threads, 0, l.stream>>>(out.data, a.data, b.data, l.n, a.limbs,
                                                                             out.limbs, l.tables.primes);
  check_launch("multiply_linear");
}

__global__ void __launch_bounds__(threads) mod_raise_kernel(u64* out, const u64* a, u32 n, int limbs, const DevPrime* primes) {
  const int row = static_cast<int>(blockIdx.y);
  const int component = row / limbs;
  const DevPrime target = primes[row % limbs];
  const u64 q0 = primes[0].value;
  const u64 q0_mod = reduce64(q0, target);
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const ulonglong2 x = load_pair(a + static_cast<std::size_t>(component) * n + k);
  auto lift = [&](u64 v) {
    const u64 r = reduce64(v, target);
    return v > (q0 - 1) / 2 ? sub_mod(r, q0_mod, target.value) : r;
  };
  store_pair(out + static_cast<std::size_t>(row) * n + k, make_ulonglong2(lift(x.x), lift(x.y)));
}

void mod_raise(const Launch& l, Poly out, Poly a) {
  mod_raise_kernel<<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(out.data, a.data, l.n, out.limbs,
                                                                                        l.tables.primes);
  check_launch("mod_raise");
}

// A kernel rather than cudaMemcpy2DAsync: at 2^16 the copy engine took 37.5 us
// for what a kernel moves in a fraction (drop_to_level is 50 nodes of EvalMod).
__global__ void __launch_bounds__(threads) copy_limbs_kernel(u64* out, const u64* a, u32 n, int out_limbs, int a_limbs) {
  const int row = static_cast<int>(blockIdx.y);
  const int component = row / out_limbs, limb = row % out_limbs;
  const u32 k = 2 * (blockIdx.x * threads + threadIdx.x);
  const std::size_t from = (static_cast<std::size_t>(component) * a_limbs + limb) * n + k;
  store_pair(out + static_cast<std::size_t>(row) * n + k, load_pair(a + from));
}

void copy_limbs(const Launch& l, Poly out, Poly a) {
  if (out.data == a.data && out.limbs == a.limbs) return;
  copy_limbs_kernel<<<grid_for(l.n, out.components * out.limbs), threads, 0, l.stream>>>(out.data, a.data, l.n,
                                                                                        out.limbs, a.limbs);
  check_launch("copy_limbs");
}

}  // namespace fhelium::cuda::kernels
