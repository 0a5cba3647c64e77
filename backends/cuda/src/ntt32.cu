#include <bit>
#include <cuda/std/bit>
#include <string>

#include "cuda_check.hpp"
#include "fhelium/error.hpp"
#include "ntt32.hpp"

namespace fhelium::cuda {
namespace {

constexpr int column_threads = 128;

struct Prime {
  u32 q;
  const u32* roots;
  const u32* roots_shoup;
};

__device__ __forceinline__ u32 mul_shoup_lazy(u32 x, u32 w, u32 w_shoup, u32 q) {
  return x * w - __umulhi(x, w_shoup) * q;
}

__device__ __forceinline__ u32 below(u32 x, u32 bound) { return x >= bound ? x - bound : x; }

// Primes from 2^30 (wide: 4q would pass 2^32) keep every value below q; the
// others below 4q, lazily. The outputs are the same residues.
__device__ __forceinline__ bool is_wide(u32 q) { return q >= (u32{1} << 30); }

__device__ __forceinline__ void forward_butterfly(u32& x, u32& y, u32 w, u32 w_shoup, u32 q) {
  if (is_wide(q)) {
    const u32 u = x;
    const u32 v = below(mul_shoup_lazy(y, w, w_shoup, q), q);
    x = below(u + v, q);
    y = below(u - v + q, q);
    return;
  }
  const u32 two_q = 2 * q;
  const u32 u = below(x, two_q);
  const u32 v = mul_shoup_lazy(y, w, w_shoup, q);
  x = u + v;
  y = u - v + two_q;
}

__device__ __forceinline__ void inverse_butterfly(u32& x, u32& y, u32 w, u32 w_shoup, u32 q) {
  const bool wide = is_wide(q);
  const u32 bound = wide ? q : 2 * q;
  const u32 u = x;
  const u32 v = y;
  x = below(u + v, bound);
  const u32 t = mul_shoup_lazy(u - v + bound, w, w_shoup, q);
  y = wide ? below(t, q) : t;
}

// Which prime each limb (blockIdx.y) uses.
struct LimbPrimes {
  int primes;             // all of them
  const int* map;         // limb b uses map[b % period]; null: b % primes
  int period;

  __device__ __forceinline__ int of(unsigned limb) const {
    return map ? map[limb % static_cast<unsigned>(period)] : static_cast<int>(limb % static_cast<unsigned>(primes));
  }
  // A negative map entry leaves its limb as it is (a whole block returns).
  __device__ __forceinline__ bool skips(unsigned limb) const { return of(limb) < 0; }
};

// Limb b's prime: tables of 4 x n words per prime, scalars (q, n^-1, Shoup) per prime.
__device__ __forceinline__ Prime prime_of(const u32* tables, const u32* scalars, std::uint64_t n, LimbPrimes primes,
                                          bool forward) {
  const int p = primes.of(blockIdx.y);
  const u32* t = tables + static_cast<std::size_t>(p) * 4 * n + (forward ? 0 : 2 * n);
  return {scalars[3 * p], t, t + n};
}

// Stages of distance >= TILE (N1 rows of TILE words): thread c holds column c.
// Forward: stages m = 1 .. N1/2; inverse: m = N1 .. 2, then times n^-1.
template <int N1, bool FORWARD>
__global__ void __launch_bounds__(column_threads)
    columns(u32* data, std::uint64_t n, const u32* tables, const u32* scalars, LimbPrimes primes) {
  if (primes.skips(blockIdx.y)) return;
  const std::uint64_t tile = n / N1;
  const std::uint64_t c = blockIdx.x * static_cast<std::uint64_t>(column_threads) + threadIdx.x;
  const Prime pr = prime_of(tables, scalars, n, primes, FORWARD);
  u32* limb = data + static_cast<std::size_t>(blockIdx.y) * n;
  u32 x[N1];
#pragma unroll
  for (int r = 0; r < N1; ++r) x[r] = limb[r * tile + c];
  if constexpr (FORWARD) {
#pragma unroll
    for (int m = 1; m < N1; m <<= 1) {
      const int rows = N1 / (2 * m);  // the distance in rows
#pragma unroll
      for (int i = 0; i < m; ++i) {
        const u32 w = __ldg(pr.roots + m + i), ws = __ldg(pr.roots_shoup + m + i);
#pragma unroll
        for (int j = 0; j < rows; ++j) forward_butterfly(x[2 * i * rows + j], x[2 * i * rows + j + rows], w, ws, pr.q);
      }
    }
  } else {
#pragma unroll
    for (int m = N1; m >= 2; m >>= 1) {
      const int h = m / 2;
      const int rows = N1 / m;
#pragma unroll
      for (int i = 0; i < h; ++i) {
        const u32 w = __ldg(pr.roots + h + i), ws = __ldg(pr.roots_shoup + h + i);
#pragma unroll
        for (int j = 0; j < rows; ++j) inverse_butterfly(x[2 * i * rows + j], x[2 * i * rows + j + rows], w, ws, pr.q);
      }
    }
    const int p = primes.of(blockIdx.y);
    const u32 inv_n = scalars[3 * p + 1], inv_n_shoup = scalars[3 * p + 2];
#pragma unroll
    for (int r = 0; r < N1; ++r) {
      const u32 v = mul_shoup_lazy(x[r], inv_n, inv_n_shoup, pr.q);
      x[r] = v >= pr.q ? v - pr.q : v;
    }
  }
#pragma unroll
  for (int r = 0; r < N1; ++r) limb[r * tile + c] = x[r];
}

// Stages of distance < TILE inside tile blockIdx.x, in shared memory, two
// stages per pass (each thread takes four words) with the distances known
// at compile time. Forward: distances TILE/2 .. 1, then the reduction from
// [0, 4q); inverse: 1 .. TILE/2 (the columns kernel follows), times n^-1
// when the tile is the whole limb.
template <int TILE, bool FORWARD>
__global__ void __launch_bounds__(TILE / 4)
    tiles(u32* data, std::uint64_t n, const u32* tables, const u32* scalars, LimbPrimes primes) {
  constexpr int log_tile = ::cuda::std::countr_zero(static_cast<unsigned>(TILE));
  __shared__ u32 s[TILE];
  if (primes.skips(blockIdx.y)) return;
  const Prime pr = prime_of(tables, scalars, n, primes, FORWARD);
  u32* base = data + static_cast<std::size_t>(blockIdx.y) * n + static_cast<std::size_t>(blockIdx.x) * TILE;
  const int q = static_cast<int>(threadIdx.x);  // one quad of words per pass
#pragma unroll
  for (int r = 0; r < 4; ++r) s[q + r * (TILE / 4)] = base[q + r * (TILE / 4)];
  __syncthreads();
  const auto root = [&](std::uint64_t k, u32& w, u32& w_shoup) {
    w = __ldg(pr.roots + k);
    w_shoup = __ldg(pr.roots_shoup + k);
  };
  if constexpr (FORWARD) {
    if constexpr (log_tile % 2 == 1) {  // one stage of distance TILE/2 first
      constexpr int t = TILE / 2;
      u32 w, ws;
      root(n / (2 * t) + blockIdx.x, w, ws);
#pragma unroll
      for (int r = 0; r < 2; ++r) forward_butterfly(s[q + r * (TILE / 4)], s[q + r * (TILE / 4) + t], w, ws, pr.q);
      __syncthreads();
    }
#pragma unroll
    for (int t = log_tile % 2 ? TILE / 4 : TILE / 2; t >= 2; t /= 4) {
      const int t2 = t / 2;
      const int ii = q / t2, j = q % t2;
      const int k0 = 2 * ii * t + j;
      const std::uint64_t m = n / (2 * t);
      const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(TILE / (2 * t)) + ii;
      u32 wa, wa_s, wb0, wb0_s, wb1, wb1_s;
      root(m + i, wa, wa_s);
      root(2 * m + 2 * i, wb0, wb0_s);
      root(2 * m + 2 * i + 1, wb1, wb1_s);
      u32 x0 = s[k0], x1 = s[k0 + t2], x2 = s[k0 + t], x3 = s[k0 + t + t2];
      forward_butterfly(x0, x2, wa, wa_s, pr.q);
      forward_butterfly(x1, x3, wa, wa_s, pr.q);
      forward_butterfly(x0, x1, wb0, wb0_s, pr.q);
      forward_butterfly(x2, x3, wb1, wb1_s, pr.q);
      s[k0] = x0;
      s[k0 + t2] = x1;
      s[k0 + t] = x2;
      s[k0 + t + t2] = x3;
      __syncthreads();
    }
    const u32 two_q = 2 * pr.q;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      u32 v = s[q + r * (TILE / 4)];
      v = v >= two_q ? v - two_q : v;
      base[q + r * (TILE / 4)] = v >= pr.q ? v - pr.q : v;
    }
  } else {
#pragma unroll
    for (int t = 1; t <= TILE / 4; t *= 4) {
      const int ii = q / t, j = q % t;
      const int k0 = 4 * ii * t + j;
      const std::uint64_t h = n / t / 2;
      const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(TILE / (4 * t)) + ii;
      u32 w0, w0_s, w1, w1_s, w, w_s;
      root(h + 2 * i, w0, w0_s);
      root(h + 2 * i + 1, w1, w1_s);
      root(h / 2 + i, w, w_s);
      u32 x0 = s[k0], x1 = s[k0 + t], x2 = s[k0 + 2 * t], x3 = s[k0 + 3 * t];
      inverse_butterfly(x0, x1, w0, w0_s, pr.q);
      inverse_butterfly(x2, x3, w1, w1_s, pr.q);
      inverse_butterfly(x0, x2, w, w_s, pr.q);
      inverse_butterfly(x1, x3, w, w_s, pr.q);
      s[k0] = x0;
      s[k0 + t] = x1;
      s[k0 + 2 * t] = x2;
      s[k0 + 3 * t] = x3;
      __syncthreads();
    }
    if constexpr (log_tile % 2 == 1) {  // the stage of distance TILE/2 last
      constexpr int t = TILE / 2;
      u32 w, ws;
      root(n / (2 * t) + blockIdx.x, w, ws);
#pragma unroll
      for (int r = 0; r < 2; ++r) inverse_butterfly(s[q + r * (TILE / 4)], s[q + r * (TILE / 4) + t], w, ws, pr.q);
      __syncthreads();
    }
    const bool whole_limb = n == TILE;
    const int prime = primes.of(blockIdx.y);
    const u32 inv_n = scalars[3 * prime + 1], inv_n_shoup = scalars[3 * prime + 2];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      u32 v = s[q + r * (TILE / 4)];
      if (whole_limb) {
        v = mul_shoup_lazy(v, inv_n, inv_n_shoup, pr.q);
        v = v >= pr.q ? v - pr.q : v;
      }
      base[q + r * (TILE / 4)] = v;
    }
  }
}

template <int TILE, bool FORWARD>
void launch_tiles(u32* data, std::uint64_t n, int limbs, const u32* tables, const u32* scalars, LimbPrimes primes,
                  cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n / TILE), static_cast<unsigned>(limbs));
  tiles<TILE, FORWARD><<<grid, TILE / 4, 0, stream>>>(data, n, tables, scalars, primes);
  check_launch("ntt32 tiles");
}

template <int N1, bool FORWARD>
void launch_columns(u32* data, std::uint64_t n, int limbs, const u32* tables, const u32* scalars, LimbPrimes primes,
                    cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n / N1 / column_threads), static_cast<unsigned>(limbs));
  columns<N1, FORWARD><<<grid, column_threads, 0, stream>>>(data, n, tables, scalars, primes);
  check_launch("ntt32 columns");
}

template <bool FORWARD>
void transform(u32* data, std::uint64_t n, int limbs, const u32* tables, const u32* scalars, LimbPrimes primes,
               cudaStream_t stream) {
  const auto run = [&](auto tile_constant, auto rows_constant) {
    constexpr int tile = decltype(tile_constant)::value;
    constexpr int rows = decltype(rows_constant)::value;
    if constexpr (rows == 1) {
      launch_tiles<tile, FORWARD>(data, n, limbs, tables, scalars, primes, stream);
    } else if constexpr (FORWARD) {
      launch_columns<rows, true>(data, n, limbs, tables, scalars, primes, stream);
      launch_tiles<tile, true>(data, n, limbs, tables, scalars, primes, stream);
    } else {
      launch_tiles<tile, false>(data, n, limbs, tables, scalars, primes, stream);
      launch_columns<rows, false>(data, n, limbs, tables, scalars, primes, stream);
    }
  };
  using std::integral_constant;
  switch (std::countr_zero(n)) {
    case 10:
      return run(integral_constant<int, 1024>{}, integral_constant<int, 1>{});
    case 11:
      return run(integral_constant<int, 2048>{}, integral_constant<int, 1>{});
    case 12:
      return run(integral_constant<int, 1024>{}, integral_constant<int, 4>{});
    case 13:
      return run(integral_constant<int, 1024>{}, integral_constant<int, 8>{});
    case 14:
      return run(integral_constant<int, 1024>{}, integral_constant<int, 16>{});
    case 15:
      return run(integral_constant<int, 1024>{}, integral_constant<int, 32>{});
    // Above 2^15 the forward transform runs 32 rows per column thread (64
    // need 168 registers) and the inverse 64 (its larger tiles cost more
    // than the registers): 69 / 62 us at 2^16 against 84 / 62 with 64 rows
    // each way and 69 / 66 with 32.
    case 16:
      if constexpr (FORWARD) return run(integral_constant<int, 2048>{}, integral_constant<int, 32>{});
      return run(integral_constant<int, 1024>{}, integral_constant<int, 64>{});
    case 17:
      if constexpr (FORWARD) return run(integral_constant<int, 4096>{}, integral_constant<int, 32>{});
      return run(integral_constant<int, 2048>{}, integral_constant<int, 64>{});
    default:
      throw InvalidArgumentError("DeviceNtt32: ring degree " + std::to_string(n) + ", expected 2^10 to 2^17");
  }
}

}  // namespace

DeviceNtt32::DeviceNtt32(const std::vector<NttTable32>& tables)
    : n_(tables.empty() ? 0 : tables.front().ring_degree()), primes_(static_cast<int>(tables.size())) {
  if (tables.empty()) throw InvalidArgumentError("DeviceNtt32: no prime");
  if (n_ < 1024 || n_ > (std::uint64_t{1} << 17)) {
    throw InvalidArgumentError("DeviceNtt32: ring degree " + std::to_string(n_) + ", expected 2^10 to 2^17");
  }
  std::vector<u32> host_tables, host_scalars;
  for (const NttTable32& t : tables) {
    if (t.ring_degree() != n_) {
      throw InvalidArgumentError("DeviceNtt32: tables of ring degrees " + std::to_string(n_) + " and " +
                                 std::to_string(t.ring_degree()));
    }
    for (const auto* v : {&t.roots(), &t.roots_shoup(), &t.inverse_roots(), &t.inverse_roots_shoup()}) {
      host_tables.insert(host_tables.end(), v->begin(), v->end());
    }
    host_scalars.insert(host_scalars.end(), {t.modulus(), t.inverse_n(), t.inverse_n_shoup()});
  }
  check(cudaMalloc(&tables_, host_tables.size() * sizeof(u32)), "cudaMalloc (ntt32 tables)");
  check(cudaMalloc(&scalars_, host_scalars.size() * sizeof(u32)), "cudaMalloc (ntt32 scalars)");
  check(cudaMemcpy(tables_, host_tables.data(), host_tables.size() * sizeof(u32), cudaMemcpyHostToDevice),
        "cudaMemcpy (ntt32 tables)");
  check(cudaMemcpy(scalars_, host_scalars.data(), host_scalars.size() * sizeof(u32), cudaMemcpyHostToDevice),
        "cudaMemcpy (ntt32 scalars)");
}

DeviceNtt32::~DeviceNtt32() {
  cudaFree(tables_);
  cudaFree(scalars_);
}

void DeviceNtt32::forward(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<true>(data, n_, limbs, tables_, scalars_, {primes_, limb_primes, period}, stream);
}

void DeviceNtt32::inverse(u32* data, int limbs, cudaStream_t stream, const int* limb_primes, int period) const {
  transform<false>(data, n_, limbs, tables_, scalars_, {primes_, limb_primes, period}, stream);
}

}  // namespace fhelium::cuda
