// Element-wise operations in 32-bit words (narrow_kernels.hpp).
#include "cuda_check.hpp"
#include "narrow_arith.cuh"
#include "narrow_kernels.hpp"

namespace fhelium::cuda::narrow {
namespace {

constexpr int block_threads = 256;

// Residue k of limb i of component c of p.
__device__ __forceinline__ std::size_t at(const Poly& p, int c, int i, std::size_t n, std::size_t k) {
  return (static_cast<std::size_t>(c) * static_cast<std::size_t>(p.limbs) + static_cast<std::size_t>(i)) * n + k;
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
    const u32 x = a.data[at(a, c, i, n, k)];
    if (c >= b.components) {
      out.data[at(out, c, i, n, k)] = x;
      return;
    }
    const u32 y = b.data[at(b, c, i, n, k)];
    const u32 q = primes[i].q;
    out.data[at(out, c, i, n, k)] = SUBTRACT ? sub_mod(x, y, q) : add_mod(x, y, q);
  }
};

struct Negate {
  u32 n;
  const Prime* primes;
  Poly out, a;
  __device__ void operator()(int c, int i, std::size_t k) const {
    const u32 x = a.data[at(a, c, i, n, k)];
    out.data[at(out, c, i, n, k)] = x == 0 ? 0 : primes[i].q - x;
  }
};

struct AddConstant {
  u32 n;
  const Prime* primes;
  Poly out, a;
  LimbConstants residues;
  bool ntt_domain;
  __device__ void operator()(int c, int i, std::size_t k) const {
    const u32 x = a.data[at(a, c, i, n, k)];
    const bool adds = c == 0 && (ntt_domain || k == 0);
    out.data[at(out, c, i, n, k)] = adds ? add_mod(x, residues.w[i], primes[i].q) : x;
  }
};

struct MultiplyConstant {
  u32 n;
  const Prime* primes;
  Poly out, a;
  LimbConstants constants;
  __device__ void operator()(int c, int i, std::size_t k) const {
    out.data[at(out, c, i, n, k)] =
        mul_shoup(a.data[at(a, c, i, n, k)], constants.w[i], constants.w_shoup[i], primes[i].q);
  }
};

struct MultiplyPlain {
  u32 n;
  const Prime* primes;
  Poly out, a, p;
  __device__ void operator()(int c, int i, std::size_t k) const {
    out.data[at(out, c, i, n, k)] = mul_mod(a.data[at(a, c, i, n, k)], p.data[at(p, 0, i, n, k)], primes[i]);
  }
};

// One thread per residue of all three outputs.
struct Multiply {
  u32 n;
  const Prime* primes;
  Poly out, a, b;
  __device__ void operator()(int, int i, std::size_t k) const {
    const Prime m = primes[i];
    const u32 a0 = a.data[at(a, 0, i, n, k)], a1 = a.data[at(a, 1, i, n, k)];
    const u32 b0 = b.data[at(b, 0, i, n, k)], b1 = b.data[at(b, 1, i, n, k)];
    out.data[at(out, 0, i, n, k)] = mul_mod(a0, b0, m);
    // a0 b1 + a1 b0 < 2^63: one reduction.
    out.data[at(out, 1, i, n, k)] = reduce(static_cast<std::uint64_t>(a0) * b1 + static_cast<std::uint64_t>(a1) * b0, m);
    out.data[at(out, 2, i, n, k)] = mul_mod(a1, b1, m);
  }
};

struct CopyLimbs {
  u32 n;
  Poly out, a;
  int offset;
  __device__ void operator()(int c, int i, std::size_t k) const {
    out.data[at(out, c, i, n, k)] = a.data[at(a, c, i + offset, n, k)];
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

void multiply(cudaStream_t stream, u32 n, const Prime* primes, Poly out, Poly a, Poly b) {
  launch(stream, Poly{out.data, 1, out.limbs}, Multiply{n, primes, out, a, b}, "narrow multiply");
}

void copy_limbs(cudaStream_t stream, u32 n, Poly out, Poly a, int offset) {
  launch(stream, out, CopyLimbs{n, out, a, offset}, "narrow copy_limbs");
}

}  // namespace fhelium::cuda::narrow
