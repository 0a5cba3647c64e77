// Domain conversions of whole values: every limb of every component in one
// batch (two launches per transform for N > 2048, one otherwise).
#include "kernels.hpp"
#include "ntt.cuh"

namespace fhelium::cuda::kernels {

int tile_rows_by_prime(int components, int limbs) { return components == 2 ? limbs : 0; }

void to_ntt(const Launch& l, Poly out, Poly a) {
  const ntt::PlainBatch batch{a.data, out.data, l.n, out.limbs, 0, {tile_rows_by_prime(out.components, out.limbs)}};
  ntt::forward(l.tables, batch, out.components * out.limbs, l.stream);
}

void to_coefficient(const Launch& l, Poly out, Poly a) {
  const ntt::PlainBatch batch{a.data, out.data, l.n, out.limbs, 0, {tile_rows_by_prime(out.components, out.limbs)}};
  ntt::inverse(l.tables, batch, out.components * out.limbs, l.stream);
}

}  // namespace fhelium::cuda::kernels
