// Key switching and rescale kernels in 32-bit words (narrow_kernels.hpp):
// the cpu backend's 32-bit paths, residue for residue (fold_dropped, a step
// of the fused ModDown and rescale, exact modular arithmetic).
#include <algorithm>
#include <type_traits>
#include <cuda/std/bit>
#include <cuda/std/mdspan>

#include "automorphism.cuh"
#include "cuda_check.hpp"
#include "narrow_arith.cuh"
#include "narrow_kernels.hpp"

namespace fhelium::cuda::narrow {
namespace {

constexpr int block_threads = 256;

__device__ __forceinline__ int log2_of(u32 n) { return ::cuda::std::countr_zero(n); }  // n a power of two

// `limbs` limbs of n residues each, limb-major: view(i, k) is residue k of limb i.
using Limbs = ::cuda::std::mdspan<u32, ::cuda::std::dextents<std::size_t, 2>>;
using ConstLimbs = ::cuda::std::mdspan<const u32, ::cuda::std::dextents<std::size_t, 2>>;
// components x limbs x n residues.
using Components = ::cuda::std::mdspan<u32, ::cuda::std::dextents<std::size_t, 3>>;
using ConstComponents = ::cuda::std::mdspan<const u32, ::cuda::std::dextents<std::size_t, 3>>;

dim3 grid_of(u32 n, unsigned rows, unsigned depth = 1) {
  return {(n + block_threads - 1) / block_threads, rows, depth};
}

__global__ void __launch_bounds__(block_threads)
    galois_coefficients_kernel(const Prime* primes, const u32* in, u32* out, u32 n, u32 galois_element) {
  const u32 i = blockIdx.x * block_threads + threadIdx.x;
  if (i >= n) return;
  const std::size_t limb = static_cast<std::size_t>(blockIdx.y) * n;
  const u32 image = (i * galois_element) & (2 * n - 1);  // products wrap mod 2^32, a multiple of 2N
  const u32 x = in[limb + i];
  if (image < n) {
    out[limb + image] = x;
  } else {
    out[limb + image - n] = x == 0 ? 0 : primes[blockIdx.y].q - x;
  }
}

// A conversion block: 2 x block_threads coefficients (two per thread, one
// 8-byte load or store per limb) and 16 targets, whose constants it stages in
// shared memory first. Each thread computes its scaled residues y_i and
// overflow count v once per block (the doubles summed in the cpu's order,
// no fused multiply-add). SOURCES, the most source primes of the launch,
// bounds the unrolled loops (no steps issued past it).
constexpr int targets_per_block = 16;
constexpr u32 coefficients_per_block = 2 * block_threads;

struct StagedTargets {
  Prime to[targets_per_block];
  alignas(16) u32 hat[targets_per_block * max_from_primes];  // [A/a_i]_{b_j} at j*max_from_primes+i, 0 past |A|
  u32 overflow[targets_per_block * (max_from_primes + 1)];   // [v A]_{b_j} at j*(|A|+1)+v
};

// h [2^32]_b + l for x = h 2^32 + l: the same residue mod b, below (2^32 - 1) b.
__device__ __forceinline__ std::uint64_t fold(std::uint64_t x, const Prime& b) {
  return mad_wide(static_cast<u32>(x >> 32), b.two32, static_cast<u32>(x));
}

__device__ __forceinline__ u32 scaled_residue(const ConverterView& c, int i, u32 x, double& overflow) {
  const u32 r = mul_shoup(x, c.hat_inverse[i], c.hat_inverse_shoup[i], c.from[i].q);
  overflow = __dadd_rn(overflow, __dmul_rn(static_cast<double>(r), c.inverse_double[i]));
  return r;
}

// Targets [16 chunk, 16 chunk + 16) of `in` (from_count limbs) into `out`
// (to_count limbs), coefficients [2 threadIdx.x, +2) of block blockIdx.x.
template <int SOURCES>
__device__ __forceinline__ void convert_block(const ConverterView& c, const u32* in, u32* out, u32 n, int chunk,
                                              StagedTargets& staged, bool accumulate = false) {
  const int na = c.from_count;
  const u32 fold_after = c.fold_after;  // a register: read once, not at every product
  const int first = chunk * targets_per_block;
  const int count = min(targets_per_block, c.to_count - first);
  for (int t = static_cast<int>(threadIdx.x); t < count * max_from_primes; t += block_threads) {
    const int j = t / max_from_primes, i = t % max_from_primes;
    staged.hat[t] = i < na ? c.hat_mod_to[(first + j) * na + i] : 0;
  }
  for (int t = static_cast<int>(threadIdx.x); t < count * (na + 1); t += block_threads) {
    staged.overflow[t] = c.overflow_mod_to[first * (na + 1) + t];
  }
  if (static_cast<int>(threadIdx.x) < count) staged.to[threadIdx.x] = c.to[first + static_cast<int>(threadIdx.x)];
  __syncthreads();
  const u32 k = blockIdx.x * coefficients_per_block + 2 * threadIdx.x;
  if (k >= n) return;
  const ConstLimbs from(in, static_cast<std::size_t>(na), n);
  const Limbs to(out, static_cast<std::size_t>(c.to_count), n);
  u32 y0[SOURCES], y1[SOURCES];
  double overflow0 = 0.0, overflow1 = 0.0;
#pragma unroll
  for (int i = 0; i < SOURCES; ++i) {
    if (i < na) {
      const uint2 x = *reinterpret_cast<const uint2*>(&from(i, k));
      y0[i] = scaled_residue(c, i, x.x, overflow0);
      y1[i] = scaled_residue(c, i, x.y, overflow1);
    }
  }
  const auto v0 = static_cast<u32>(__dadd_rn(overflow0, 0.5));
  const auto v1 = static_cast<u32>(__dadd_rn(overflow1, 0.5));
  constexpr int quads = (SOURCES + 3) / 4;
  for (int j = 0; j < count; ++j) {
    const Prime b = staged.to[j];
    u32 hat[4 * quads];
#pragma unroll
    for (int g = 0; g < quads; ++g) {
      const uint4 h = reinterpret_cast<const uint4*>(staged.hat + j * max_from_primes)[g];
      hat[4 * g] = h.x;
      hat[4 * g + 1] = h.y;
      hat[4 * g + 2] = h.z;
      hat[4 * g + 3] = h.w;
    }
    std::uint64_t acc0 = 0, acc1 = 0;
#pragma unroll
    for (int i = 0; i < SOURCES; ++i) {
      if (i < na) {
        acc0 = mad_wide(y0[i], hat[i], acc0);
        acc1 = mad_wide(y1[i], hat[i], acc1);
        if ((fold_after >> i) & 1u) {
          acc0 = fold(acc0, b);
          acc1 = fold(acc1, b);
        }
      }
    }
    const u32* overflow = staged.overflow + j * (na + 1);
    uint2 r{sub_mod(reduce(acc0, b), overflow[v0], b.q), sub_mod(reduce(acc1, b), overflow[v1], b.q)};
    uint2* stored = reinterpret_cast<uint2*>(&to(first + j, k));
    if (accumulate) {
      const uint2 held = *stored;
      r = {add_mod(r.x, held.x, b.q), add_mod(r.y, held.y, b.q)};
    }
    *stored = r;
  }
}

// Component blockIdx.z, targets of chunk blockIdx.y.
template <int SOURCES>
__global__ void __launch_bounds__(block_threads) convert_kernel(ConverterView c, const u32* in, std::size_t in_stride,
                                                                u32* out, std::size_t out_stride, u32 n,
                                                                bool accumulate) {
  __shared__ StagedTargets staged;
  convert_block<SOURCES>(c, in + blockIdx.z * in_stride, out + blockIdx.z * out_stride, n, static_cast<int>(blockIdx.y),
                staged, accumulate);
}

// Coefficient k of limb first + blockIdx.y of component blockIdx.z.
__global__ void __launch_bounds__(block_threads) fold_dropped_kernel(const __grid_constant__ DroppedFold f, u32 n) {
  const u32 k = blockIdx.x * block_threads + threadIdx.x;
  if (k >= n) return;
  const int i = f.first + static_cast<int>(blockIdx.y);
  const std::size_t at = static_cast<std::size_t>(i) * n + k;
  const u32 q = f.primes[i].q;
  u32& x = f.acc[blockIdx.z * f.acc_stride + at];
  x = add_mod(mul_shoup(x, f.w.w[i], f.w.w_shoup[i], q), f.add[blockIdx.z * f.add_stride + at], q);
}

// Digit blockIdx.z, targets of chunk blockIdx.y (chunks past a digit's
// targets return). The parameters stay in the constant bank (indexed at run
// time, a by-value copy would go to local memory).
template <int SOURCES>
__global__ void __launch_bounds__(block_threads) convert_digits_kernel(const __grid_constant__ DigitConversion p,
                                                                       u32 n) {
  __shared__ StagedTargets staged;
  const int j = static_cast<int>(blockIdx.z);
  const ConverterView& c = p.converters[j];
  if (static_cast<int>(blockIdx.y) * targets_per_block >= c.to_count) return;  // the whole block
  convert_block<SOURCES>(c, p.in + static_cast<std::size_t>(p.begin[j]) * n,
                p.out + static_cast<std::size_t>(j) * static_cast<std::size_t>(p.slots) * n, n,
                static_cast<int>(blockIdx.y), staged);
}

// Limb blockIdx.y of digit blockIdx.z's own limbs.
__global__ void __launch_bounds__(block_threads) own_limbs_kernel(const __grid_constant__ OwnLimbs p, u32 n) {
  const u32 k = blockIdx.x * block_threads + threadIdx.x;
  const int j = static_cast<int>(blockIdx.z);
  const int i = static_cast<int>(blockIdx.y);
  const int own = p.end[j] - p.begin[j];
  if (k >= n || i >= own) return;
  const u32 index = p.galois_element ? automorphism_index(k, p.galois_element, log2_of(n)) : k;
  const std::size_t to = static_cast<std::size_t>(j) * static_cast<std::size_t>(p.slots) + (p.slots - own + i);
  p.extended[to * n + k] = p.d[static_cast<std::size_t>(p.begin[j] + i) * n + index];
}

// Where slot `slot` sits in an extended digit whose own limbs are [begin, end):
// the converter's targets (the other Q limbs, then P), then the own limbs.
__device__ __forceinline__ int position_in_digit(int slot, int begin, int end, int slots) {
  const int own = end - begin;
  if (slot >= begin && slot < end) return slots - own + (slot - begin);
  return slot < begin ? slot : slot - own;
}

// Thread t of slot blockIdx.y, coefficients k = 2t and 2t + 1: sum over
// digits j of extended_j x key_j (b and a parts), 64-bit sums of 32-bit
// products reduced every `products` digits: 7 below 2^30.5 (q + 7 (q - 1)^2
// < 2^64), else 3.
__global__ void __launch_bounds__(block_threads) inner_product_kernel(InnerProduct p, u32 n) {
  const u32 k = 2 * (blockIdx.x * block_threads + threadIdx.x);
  if (k >= n) return;
  const int slot = static_cast<int>(blockIdx.y);
  const int key_limb = p.slot_primes[slot];
  const Prime m = p.primes[key_limb];
  const int products = m.q < 0x5a827999u ? 7 : 3;  // 2^30.5
  const u32 index0 = p.galois_element ? automorphism_index(k, p.galois_element, log2_of(n)) : k;
  const u32 index1 = p.galois_element ? automorphism_index(k + 1, p.galois_element, log2_of(n)) : k + 1;
  const auto slots = static_cast<std::size_t>(p.slots);
  const auto key_limbs = static_cast<std::size_t>(p.key_limbs);
  const ConstComponents extended(p.extended, static_cast<std::size_t>(p.digits), slots, n);
  // The key's digits, each a (b, a) pair of key_limbs limbs.
  const ::cuda::std::mdspan<const u32, ::cuda::std::dextents<std::size_t, 4>> key(
      p.key, static_cast<std::size_t>(p.first_digit + p.digits), 2, key_limbs, n);
  std::uint64_t sum[2][2] = {};  // [part][coefficient]
  int pending = 0;
  for (int j = 0; j < p.digits; ++j) {
    const int position = position_in_digit(slot, p.digit_begin[j], p.digit_end[j], p.slots);
    const u32 x0 = extended(j, position, index0);
    const u32 x1 = extended(j, position, index1);
    const int key_digit = p.first_digit + j;
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const uint2 w = *reinterpret_cast<const uint2*>(&key(key_digit, part, key_limb, k));
      sum[part][0] = mad_wide(x0, w.x, sum[part][0]);
      sum[part][1] = mad_wide(x1, w.y, sum[part][1]);
    }
    if (++pending == products) {
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        sum[part][0] = reduce(sum[part][0], m);
        sum[part][1] = reduce(sum[part][1], m);
      }
      pending = 0;
    }
  }
  const Components accumulators(p.accumulators, 2, slots, n);
#pragma unroll
  for (int part = 0; part < 2; ++part) {
    *reinterpret_cast<uint2*>(&accumulators(part, slot, k)) = {reduce(sum[part][0], m), reduce(sum[part][1], m)};
  }
}

// Coefficient blockIdx.x * block_threads + threadIdx.x of component blockIdx.y.
__global__ void __launch_bounds__(block_threads)
    mod_raise_kernel(const Prime* primes, LevelZero zero, Poly out, Poly a, u32 n) {
  const u32 k = blockIdx.x * block_threads + threadIdx.x;
  if (k >= n) return;
  const int c = static_cast<int>(blockIdx.y);
  const ConstComponents in(a.data, static_cast<std::size_t>(a.components), static_cast<std::size_t>(a.limbs), n);
  std::uint64_t x = 0, m = 1;
#pragma unroll  // the constants stay in registers
  for (int j = 0; j < max_level_zero_primes; ++j) {  // x < q_0 .. q_j after step j
    if (j < zero.count) {
      const std::uint64_t q = zero.q[j];
      const std::uint64_t difference = (in(c, j, k) + q - x % q) % q;
      x += m * (difference * zero.garner[j] % q);
      m *= q;
    }
  }
  const auto q0 = static_cast<std::int64_t>(zero.modulus);
  auto v = static_cast<std::int64_t>(x);
  if (v > (q0 - 1) / 2) v -= q0;
  const Components raised(out.data, static_cast<std::size_t>(out.components), static_cast<std::size_t>(out.limbs), n);
  for (int i = 0; i < out.limbs; ++i) {
    const auto q = static_cast<std::int64_t>(primes[i].q);
    const std::int64_t r = v % q;
    raised(c, i, k) = static_cast<u32>(r < 0 ? r + q : r);
  }
}

// Calls launch(integral_constant<int, S>) with the smallest S >= sources
// (at most max_from_primes, which Tables refuses to exceed when it builds the
// converters): the kernel instantiation for that many sources.
template <int S = 1, class Launch>
void with_sources(int sources, const Launch& launch) {
  if constexpr (S < max_from_primes) {
    if (sources > S) return with_sources<S + 1>(sources, launch);
  }
  launch(std::integral_constant<int, S>{});
}

}  // namespace

void mod_raise(cudaStream_t stream, u32 n, const Prime* primes, const LevelZero& zero, Poly out, Poly a) {
  mod_raise_kernel<<<grid_of(n, static_cast<unsigned>(out.components)), block_threads, 0, stream>>>(primes, zero, out,
                                                                                                      a, n);
  check_launch("narrow mod_raise");
}

void galois_coefficients(cudaStream_t stream, u32 n, const Prime* primes, const u32* in, u32* out, int limbs,
                         u32 galois_element) {
  galois_coefficients_kernel<<<grid_of(n, static_cast<unsigned>(limbs)), block_threads, 0, stream>>>(
      primes, in, out, n, galois_element);
  check_launch("narrow galois_coefficients");
}

void convert(cudaStream_t stream, u32 n, const ConverterView& converter, const u32* in, std::size_t in_stride,
             u32* out, std::size_t out_stride, int components, bool accumulate) {
  const auto chunks = static_cast<unsigned>((converter.to_count + targets_per_block - 1) / targets_per_block);
  const dim3 grid((n + coefficients_per_block - 1) / coefficients_per_block, chunks, static_cast<unsigned>(components));
  with_sources(converter.from_count, [&](auto sources) {
    convert_kernel<sources()>
        <<<grid, block_threads, 0, stream>>>(converter, in, in_stride, out, out_stride, n, accumulate);
  });
  check_launch("narrow convert");
}

void fold_dropped(cudaStream_t stream, u32 n, const DroppedFold& args) {
  fold_dropped_kernel<<<grid_of(n, static_cast<unsigned>(args.limbs), 2), block_threads, 0, stream>>>(args, n);
  check_launch("narrow fold_dropped");
}

void convert_digits(cudaStream_t stream, u32 n, const DigitConversion& args) {
  int chunks = 0, sources = 0;
  for (int j = 0; j < args.digits; ++j) {
    chunks = std::max(chunks, (args.converters[j].to_count + targets_per_block - 1) / targets_per_block);
    sources = std::max(sources, args.converters[j].from_count);
  }
  const dim3 grid((n + coefficients_per_block - 1) / coefficients_per_block, static_cast<unsigned>(chunks),
                  static_cast<unsigned>(args.digits));
  with_sources(sources, [&](auto most) { convert_digits_kernel<most()><<<grid, block_threads, 0, stream>>>(args, n); });
  check_launch("narrow convert_digits");
}

void own_limbs(cudaStream_t stream, u32 n, const OwnLimbs& args) {
  own_limbs_kernel<<<grid_of(n, static_cast<unsigned>(args.max_own), static_cast<unsigned>(args.digits)),
                     block_threads, 0, stream>>>(args, n);
  check_launch("narrow own_limbs");
}

void inner_product(cudaStream_t stream, u32 n, const InnerProduct& args) {
  inner_product_kernel<<<grid_of(n / 2, static_cast<unsigned>(args.slots)), block_threads, 0, stream>>>(args, n);
  check_launch("narrow inner_product");
}

}  // namespace fhelium::cuda::narrow
