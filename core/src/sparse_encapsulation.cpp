#include "fhelium/sparse_encapsulation.hpp"

#include <algorithm>
#include <string>

#include "fhelium/error.hpp"

namespace fhelium {

std::shared_ptr<const Context> encapsulation_low_context(const Context& context) {
  // Level 0's primes, and as many special primes (a digit of one level-0
  // prime needs about its size of P: 64-bit q_0 p_0, 32-bit q_0 q_1 p_0 p_1).
  const int count = context.level_basis(0).count;
  if (context.special_count() < count) {
    throw InvalidArgumentError("sparse-secret encapsulation: the context has " +
                               std::to_string(context.special_count()) + " special primes, expected at least " +
                               std::to_string(count) + " (as many as level 0 has primes)");
  }
  std::vector<u64> q;
  std::vector<u64> p;
  for (int i = 0; i < count; ++i) {
    q.push_back(context.level_modulus(0, i).value);
    p.push_back(context.p()[static_cast<std::size_t>(i)].value);
  }
  CkksParameters low = context.params();
  low.wide_levels = 0;
  return Context::create_with_primes(low, q, p);
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
