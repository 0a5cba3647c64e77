// Rescale by the last prime q_l (NTT domain), as the CPU backend:
//   t = INTT_l(c_l) + floor(q_l / 2) mod q_l
//   out_i = (c_i - NTT_i((t mod q_i) - [floor(q_l / 2)]_{q_i})) * q_l^-1, i < l.
// Two transforms: the inverse of the dropped limbs (with the + floor(q_l/2)
// fused into its store), and one forward batch over every kept limb whose
// load computes the shifted residue and whose store subtracts and scales.
#include "kernels.hpp"
#include "ntt.cuh"

namespace fhelium::cuda::kernels {
namespace {

// Limb `last` of every component of a -> temp (components x n), plus half.
struct DroppedLimbBatch {
  const u64* a;
  u64* temp;
  u32 n;
  int a_limbs;
  int last;
  u64 q_last;
  u64 half;
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int) const { return last; }
  __device__ u64 load(int b, u32 pos) const {
    return a[(static_cast<std::size_t>(b) * a_limbs + last) * n + pos];
  }
  __device__ u64* inter(int b) const { return temp + static_cast<std::size_t>(b) * n; }
  struct Aux {};
  __device__ Aux fetch(int, u32) const { return {}; }
  __device__ void store(int b, u32 pos, u64 v, Aux) const {
    temp[static_cast<std::size_t>(b) * n + pos] = add_mod(v, half, q_last);
  }
};

// Batch b = component x kept + limb over the kept limbs.
struct KeptLimbBatch {
  const u64* temp;
  const u64* a;
  u64* out;
  u32 n;
  int kept;
  int a_limbs;
  const DevPrime* primes;
  RescaleView tables;
  ntt::TileRows rows{};
  __device__ bool skip(int) const { return false; }
  __device__ int prime(int b) const { return b % kept; }
  __device__ u64 load(int b, u32 pos) const {
    const int component = b / kept;
    const int i = b % kept;
    const DevPrime& p = primes[i];
    const u64 t = temp[static_cast<std::size_t>(component) * n + pos];
    return sub_mod(reduce64(t, p), tables.half_last[i], p.value);
  }
  __device__ u64* inter(int b) const { return out + static_cast<std::size_t>(b) * n; }
  struct Aux {
    u64 x;
  };
  __device__ Aux fetch(int b, u32 pos) const {
    const int component = b / kept;
    const int i = b % kept;
    return {a[(static_cast<std::size_t>(component) * a_limbs + i) * n + pos]};
  }
  __device__ void store(int b, u32 pos, u64 v, Aux aux) const {
    const int i = b % kept;
    const u64 q = primes[i].value;
    out[static_cast<std::size_t>(b) * n + pos] =
        mul_shoup(sub_mod(aux.x, v, q), tables.last_inverse[i], tables.last_inverse_shoup[i], q);
  }
};

// The fused path (degrees with a column pass): the dropped limb's inverse
// column stages, + floor(q_l/2), the reduction to q_i and the forward column
// stages of every kept limb in one launch; b = component x kept + limb.
struct RescaleMap {
  u64 half;
  u64 q_last;
  DevPrime p;
  u64 half_last;
  __device__ u64 operator()(u64 x) const {
    return sub_mod(reduce64(add_mod(x, half, q_last), p), half_last, p.value);
  }
};

struct RescaleColumns {
  const u64* temp;
  u64* out;
  u32 n;
  int kept;
  int last;
  u64 q_last;
  const DevPrime* primes;
  RescaleView tables;
  __device__ bool skip(int) const { return false; }
  __device__ int source_prime(int) const { return last; }
  __device__ const u64* source(int b) const { return temp + static_cast<std::size_t>(b / kept) * n; }
  __device__ int prime(int b) const { return b % kept; }
  __device__ u64* inter(int b) const { return out + static_cast<std::size_t>(b) * n; }
  __device__ RescaleMap map(int b) const {
    const int i = b % kept;
    return {q_last >> 1, q_last, primes[i], tables.half_last[i]};
  }
};

// The dropped limb of each component as the source of the one-launch
// cluster path (the + floor(q_l / 2) goes with the map).
struct RescaleSource {
  const u64* a;
  u32 n;
  int a_limbs;
  int kept;
  u64 q_last;
  const DevPrime* primes;
  RescaleView tables;
  __device__ bool skip(int) const { return false; }
  __device__ int source_prime(int) const { return kept; }
  __device__ const u64* source(int b) const { return a + (static_cast<std::size_t>(b / kept) * a_limbs + kept) * n; }
  __device__ int prime(int b) const { return b % kept; }
  __device__ RescaleMap map(int b) const {
    const int i = b % kept;
    return {q_last >> 1, q_last, primes[i], tables.half_last[i]};
  }
};

}  // namespace

void rescale(const Launch& l, const RescaleView& tables, Poly out, Poly a, u64* temp) {
  const int last = out.limbs;
  const DroppedLimbBatch dropped{a.data, temp, l.n, a.limbs, last, tables.q_last, tables.q_last >> 1};
  const KeptLimbBatch kept{temp,
                           a.data,
                           out.data,
                           l.n,
                           out.limbs,
                           a.limbs,
                           l.tables.primes,
                           tables,
                           {tile_rows_by_prime(out.components, out.limbs)}};
  if (ntt::cluster_ntt(l.tables.log_n)) {
    // 1 launch: each kept limb's cluster redoes the dropped limb's inverse.
    const RescaleSource source{a.data, l.n, a.limbs, out.limbs, tables.q_last, l.tables.primes, tables};
    ntt::inverse_map_forward_cluster_launch(l.tables, source, kept, out.components * out.limbs, l.stream);
    return;
  }
  if (ntt::fuse_columns(l.tables.log_n)) {
    // 3 launches: inverse tiles of the dropped limbs, the fused columns, forward tiles.
    ntt::inverse_tiles_only(l.tables, dropped, a.components, l.stream);
    const RescaleColumns columns{temp, out.data, l.n, out.limbs, last, tables.q_last, l.tables.primes, tables};
    ntt::inverse_map_forward(l.tables, columns, out.components * out.limbs, out.limbs, l.stream);
    ntt::forward_tiles_only(l.tables, kept, out.components * out.limbs, l.stream);
    return;
  }
  ntt::inverse(l.tables, dropped, a.components, l.stream);
  ntt::forward(l.tables, kept, out.components * out.limbs, l.stream);
}

}  // namespace fhelium::cuda::kernels
