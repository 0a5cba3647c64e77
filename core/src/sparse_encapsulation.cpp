#include "fhelium/sparse_encapsulation.hpp"

#include <algorithm>
#include <string>

#include "fhelium/error.hpp"

namespace fhelium {

std::shared_ptr<const Context> encapsulation_low_context(const Context& context) {
  if (context.special_count() < 1) {
    throw InvalidArgumentError("sparse-secret encapsulation: the context has no special prime, expected one or more");
  }
  if (context.level_basis(0).count != 1) {
    throw ParameterError(
        "the sparse-secret encapsulation (bootstrapping) needs one prime at level 0; the 32-bit "
        "family's level 0 holds " +
        std::to_string(context.level_basis(0).count) + ": expected a context of 64-bit words");
  }
  CkksParameters low = context.params();
  low.q_bits = {low.q_bits.front()};
  low.p_bits = {low.p_bits.front()};
  return Context::create_with_primes(low, {context.q().front().value}, {context.p().front().value});
}

SparseEncapsulationKeys SparseEncapsulationKeys::generate(std::shared_ptr<const Context> context,
                                                          const SecretKey& secret, Csprng& rng, int hamming_weight) {
  const Context& ctx = *context;
  if (ctx.params().hamming_weight != 0) {
    throw InvalidArgumentError("sparse-secret encapsulation: the context's secret is already sparse (hamming_weight " +
                               std::to_string(ctx.params().hamming_weight) + "), expected a dense one");
  }
  SparseEncapsulationKeys keys;
  keys.hamming_weight = hamming_weight;
  keys.low_context = encapsulation_low_context(ctx);

  std::vector<std::int8_t> sparse = sample_sparse_ternary(rng, ctx.ring_degree(), hamming_weight);
  {
    const SecretKey dense_low = make_secret_key(*keys.low_context, secret.coefficients());
    const SecretKey sparse_low = make_secret_key(*keys.low_context, sparse);
    keys.dense_to_sparse = KeyGenerator(keys.low_context, rng).switching_key(dense_low, sparse_low);
  }
  const SecretKey sparse_main = make_secret_key(ctx, sparse);
  std::fill(sparse.begin(), sparse.end(), std::int8_t{0});
  keys.sparse_to_dense = KeyGenerator(std::move(context), rng).switching_key(sparse_main, secret);
  return keys;
}

}  // namespace fhelium
