// Element-wise operations in 32-bit words (narrow_kernels.hpp).
#include <cuda/std/mdspan>

#include "cuda_check.hpp"
#include "narrow_arith.cuh"
#include "narrow_kernels.hpp"
#include "term_chunks.hpp"

namespace fhelium::cuda::narrow {
namespace {

constexpr int block_threads = 256;

// A polynomial's residues as components x limbs x n (limb-major):
// view(p, n)(c, i, k) is residue k of limb i of component c.
using Residues = ::cuda::std::mdspan<u32, ::cuda::std::dextents<std::size_t, 3>>;
__device__ __forceinline__ Residues view(const Poly& p, std::size_t n) {
  return Residues(p.data, static_cast<std::size_t>(p.components), static_cast<std::size_t>(p.limbs), n);
}

// op(c, i, k) over `grid_of`'s components x limbs x n residues; blockIdx.y
// is the limb of a component, so a block's residues share a prime.
template <class Op>
__global__ void __launch_bounds__(block_threads) for_each(Poly grid_of, u32 n, Op op) {
  const std::size_t k = blockIdx.x * static_cast<std::size_t>(block_threads) + threadIdx.x;
  if (k >= n) return;
  op(static_cast<int>(blockIdx.y) / grid_of.limbs, static_cast<int>(blockIdx.y) % grid_of.limbs, k);
}

template <class Op>
void launch(cudaStream_t stream, Poly grid_of, const Op& op, const char* what) {
  const dim3 grid((op.n + block_threads - 1) / block_threads,
                  static_cast<unsigned>(grid_of.components * grid_of.limbs));
  for_each<<<grid, block_threads, 0, stream>>>(grid_of, op.n, op);
  check_launch(what);
}

// Components of a beyond b's are copied.
template <bool SUBTRACT>
struct Binary {
  u32 n;
  const Prime* primes;
  Poly out, a, b;
  __device__ void operator()(int c, int i, std::size_t k) const {
    const u32 x = view(a, n)(c, i, k);
    if (c >= b.components) {
      view(out, n)(c, i, k) = x;
      return;
    }
    const u32 y = view(b, n)(c, i, k);
    const u32 q = primes[i].q;
    view(out, n)(c, i, k) = SUBTRACT ? sub_mod(x, y, q) : add_mod(x, y, q);
  }
};

struct Negate {
  u32 n;
  const Prime* primes;
  Poly out, a;
  __device__ void operator()(int c, int i, std::size_t k) const {
    const u32 x = view(a, n)(c, i, k);
    view(out, n)(c, i, k) = x == 0 ? 0 : primes[i].q - x;
  }
};

struct AddConstant {
  u32 n;
  const Prime* primes;
  Poly out, a;
  LimbConstants residues;
  bool ntt_domain;
  __device__ void operator()(int c, int i, std::size_t k) const {
    const u32 x = view(a, n)(c, i, k);
    const bool adds = c == 0 && (ntt_domain || k == 0);
    view(out, n)(c, i, k) = adds ? add_mod(x, residues.w[i], primes[i].q) : x;
  }
};

struct MultiplyConstant {
  u32 n;
  const Prime* primes;
  Poly out, a;
  LimbConstants constants;
  __device__ void operator()(int c, int i, std::size_t k) const {
    view(out, n)(c, i, k) =
        mul_shoup(view(a, n)(c, i, k), constants.w[i], constants.w_shoup[i], primes[i].q);
  }
};

struct MultiplyPlain {
  u32 n;
  const Prime* primes;
  Poly out, a, p;
  __device__ void operator()(int c, int i, std::size_t k) const {
    view(out, n)(c, i, k) = mul_mod(view(a, n)(c, i, k), view(p, n)(0, i, k), primes[i]);
  }
};

// out = the sum of a_i p_i (of a_i when p[0] is null), plus out itself when
// `accumulate` (a later launch of the same sum), over components [first,
// first + C): one thread per residue of a limb, so each plaintext residue
// is read once for all C components.
template <int C>
struct SumProducts {
  u32 n;
  const Prime* primes;
  Poly out;
  SumTerms terms;
  bool accumulate;
  int first;
  __device__ void operator()(int, int i, std::size_t k) const {
    const Prime m = primes[i];
    const Residues sums = view(out, n);
    const std::size_t plain_at = sums.mapping()(0, i, k);
    std::size_t at[C];  // the same places in every a_t
    u32 sum[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      at[c] = sums.mapping()(first + c, i, k);
      sum[c] = accumulate ? out.data[at[c]] : 0;
    }
    for (int t = 0; t < terms.count; ++t) {
      const u32 w = terms.p[0] ? terms.p[t][plain_at] : 1;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const u32 x = terms.a[t][at[c]];
        sum[c] = add_mod(sum[c], terms.p[0] ? mul_mod(x, w, m) : x, m.q);
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) out.data[at[c]] = sum[c];
  }
};

// out = the sum of a_t r_t over a launch's terms at limbs [first, first +
// limbs), plus out itself when `accumulate`; j is the limb in the launch.
struct SumConstantProducts {
  u32 n;
  const Prime* primes;
  Poly out;
  ConstantTerms terms;
  bool accumulate;
  __device__ void operator()(int c, int j, std::size_t k) const {
    const int i = terms.first + j;
    const Prime m = primes[i];
    const Residues sums = view(out, n);
    const std::size_t at = sums.mapping()(c, i, k);  // the same place in every a_t
    u32 sum = accumulate ? sums(c, i, k) : 0;
    for (int t = 0; t < terms.count; ++t) sum = add_mod(sum, mul_mod(terms.a[t][at], terms.r[t][j], m), m.q);
    sums(c, i, k) = sum;
  }
};

// Every group's sum of products over a launch's D distinct ciphertexts, two
// components, plus what the output holds when `accumulate`: a thread reads
// its residue of each ciphertext once (registers) for all groups.
using GroupTerms = cuda::GroupTerms<u32, 16, 16>;
template <int D>
struct SumProductGroups {
  u32 n;
  const Prime* primes;
  GroupTerms terms;
  bool accumulate;
  int limbs;
  __device__ void operator()(int, int i, std::size_t k) const {
    const Prime m = primes[i];
    const std::size_t at = static_cast<std::size_t>(i) * n + k;
    const std::size_t second = static_cast<std::size_t>(limbs) * n + at;  // component 1
    u32 v0[D], v1[D];
#pragma unroll
    for (int d = 0; d < D; ++d) {
      v0[d] = terms.a[d][at];
      v1[d] = terms.a[d][second];
    }
    for (int g = 0; g < terms.groups; ++g) {
      u32* out = terms.out[g];
      u32 x = accumulate ? out[at] : 0, y = accumulate ? out[second] : 0;
#pragma unroll
      for (int d = 0; d < D; ++d) {
        const u32* p = terms.p[g][d];
        if (p == nullptr) continue;
        const u32 w = p[at];
        x = add_mod(x, mul_mod(v0[d], w, m), m.q);
        y = add_mod(y, mul_mod(v1[d], w, m), m.q);
      }
      out[at] = x;
      out[second] = y;
    }
  }
};

// One thread per residue of all three outputs.
struct Multiply {
  u32 n;
  const Prime* primes;
  Poly out, a, b;
  __device__ void operator()(int, int i, std::size_t k) const {
    const Prime m = primes[i];
    const u32 a0 = view(a, n)(0, i, k), a1 = view(a, n)(1, i, k);
    const u32 b0 = view(b, n)(0, i, k), b1 = view(b, n)(1, i, k);
    view(out, n)(0, i, k) = mul_mod(a0, b0, m);
    // a0 b1 + a1 b0 < 2^63: one reduction.
    view(out, n)(1, i, k) = reduce(static_cast<std::uint64_t>(a0) * b1 + static_cast<std::uint64_t>(a1) * b0, m);
    view(out, n)(2, i, k) = mul_mod(a1, b1, m);
  }
};

struct CopyLimbs {
  u32 n;
  Poly out, a;
  int offset;
  __device__ void operator()(int c, int i, std::size_t k) const {
    view(out, n)(c, i, k) = view(a, n)(c, i + offset, k);
  }
};

}  // namespace

void add(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b) {
  launch(stream, out, Binary<false>{n, primes, out, a, b}, "narrow add");
}

void sub(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b) {
  launch(stream, out, Binary<true>{n, primes, out, a, b}, "narrow sub");
}

void negate(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a) {
  launch(stream, out, Negate{n, primes, out, a}, "narrow negate");
}

void add_constant(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, const LimbConstants& residues,
                  bool ntt_domain) {
  launch(stream, out, AddConstant{n, primes, out, a, residues, ntt_domain}, "narrow add_constant");
}

void multiply_constant(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a,
                       const LimbConstants& constants) {
  launch(stream, out, MultiplyConstant{n, primes, out, a, constants}, "narrow multiply_constant");
}

void multiply_plain(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly p) {
  launch(stream, out, MultiplyPlain{n, primes, out, a, p}, "narrow multiply_plain");
}

void sum_products(cudaStream_t stream, u32 n, const Prime* primes, Poly out, std::span<const Poly> a,
                  std::span<const Poly> p) {
  for_each_term_chunk<SumTerms>(a, p, [&](const SumTerms& terms, bool accumulate) {
    for_each_component_group(out.components, [&](auto group, int first) {
      launch(stream, Poly{out.data, 1, out.limbs},
             SumProducts<decltype(group)::value>{n, primes, out, terms, accumulate, first}, "narrow sum_products");
    });
  });
}

void sum_constant_products(cudaStream_t stream, u32 n, const Prime* primes, Poly out, std::span<const Poly> a,
                           std::span<const std::uint64_t> r) {
  for_each_constant_chunk<ConstantTerms>(a, r, out.limbs, [&](const ConstantTerms& terms, bool accumulate) {
    launch(stream, Poly{out.data, out.components, terms.limbs},
           SumConstantProducts{n, primes, out, terms, accumulate}, "narrow sum_constant_products");
  });
}

void sum_product_groups(cudaStream_t stream, u32 n, const Prime* primes, std::span<const Poly> outs,
                        std::span<const Poly> a, std::span<const Poly> p, std::span<const std::size_t> ends) {
  const Poly rows{outs[0].data, 1, outs[0].limbs};
  for_each_group_chunk<GroupTerms>(outs, a, p, ends, [&](const GroupTerms& terms, bool accumulate) {
    with_count<1, GroupTerms::max_inputs>(terms.inputs, [&](auto inputs) {
      launch(stream, rows, SumProductGroups<decltype(inputs)::value>{n, primes, terms, accumulate, outs[0].limbs},
             "narrow sum_product_groups");
    });
  });
}

void multiply(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b) {
  launch(stream, Poly{out.data, 1, out.limbs}, Multiply{n, primes, out, a, b}, "narrow multiply");
}

void copy_limbs(cudaStream_t stream, u32 n, Poly out, Poly a, int offset) {
  launch(stream, out, CopyLimbs{n, out, a, offset}, "narrow copy_limbs");
}

}  // namespace fhelium::cuda::narrow
