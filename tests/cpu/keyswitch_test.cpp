// Key switching and rotation invariants on the CPU backend: results do not
// depend on the thread count (determinism is the oracle), hoisted rotations
// agree with single rotations on the message, and composed rotations equal
// direct ones on the message.
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace fhelium::test {
namespace {

TEST(KeySwitch, ResiduesIndependentOfThreadCount) {
  // One special prime: the fused key switch with slots split between threads
  // by cost (2: the best split, 3: longest first); two: the stored digits.
  for (int specials : {1, 2}) {
    const CkksParameters params = small_params(12, 4, specials);
    Fixture one(params, 7, 1);
    const Message m = one.random_message(1.0);
    const auto c1 = one.encrypt(m);
    const auto r1 = one.engine.relinearize(one.engine.multiply(c1, c1), one.relin_key());
    const auto k1 = one.galois_keys({5});
    const auto g1 = one.engine.rotate(c1, 5, k1);
    for (int threads : {2, 3}) {
      SCOPED_TRACE(std::to_string(specials) + " special primes, " + std::to_string(threads) + " threads");
      Fixture many(params, 7, threads);
      many.message_rng = one.message_rng;  // unused afterwards; keep streams aligned
      const auto c2 = many.encrypt(m);
      ASSERT_EQ(one.engine.download(c1).data, many.engine.download(c2).data) << "same seed, same ciphertext";
      const auto r2 = many.engine.relinearize(many.engine.multiply(c2, c2), many.relin_key());
      EXPECT_EQ(one.engine.download(r1).data, many.engine.download(r2).data);
      const auto k2 = many.galois_keys({5});
      EXPECT_EQ(one.engine.download(g1).data, many.engine.download(many.engine.rotate(c2, 5, k2)).data);
    }
  }
}

TEST(KeySwitch, RescaleRoundsToNearest) {
  // A trivial ciphertext (c1 = 0) exposes rescale's arithmetic exactly:
  // c0 = round(c0 / q_last) coefficient-wise.
  Fixture f(small_params(10, 2));
  const Context& ctx = *f.context;
  const std::size_t n = ctx.ring_degree();
  HostValue host;
  host.state = {ctx.id(), ctx.word_size(), 2, f.scale(), Domain::coefficient, Basis::Q, 2};
  host.data.assign(host.state.words(ctx), 0);
  const u64 q_last = ctx.q()[2].value;
  const std::int64_t values[] = {0, 1, static_cast<std::int64_t>(q_last / 2), static_cast<std::int64_t>(q_last / 2 + 1),
                                 -static_cast<std::int64_t>(q_last) * 7 - 3, static_cast<std::int64_t>(q_last) * 5 + 2};
  for (int limb = 0; limb < 3; ++limb) {
    const u64 q = ctx.q()[static_cast<std::size_t>(limb)].value;
    for (std::size_t k = 0; k < std::size(values); ++k) {
      const std::int64_t v = values[k];
      host.limb(ctx, 0, limb)[k] = v >= 0 ? static_cast<u64>(v) % q : q - static_cast<u64>(-v) % q;
    }
  }
  auto ct = f.engine.to_ntt(f.engine.upload_ciphertext(host));
  const auto out = f.engine.download(f.engine.to_coefficient(f.engine.rescale(ct)));
  for (std::size_t k = 0; k < std::size(values); ++k) {
    const double exact = static_cast<double>(values[k]) / static_cast<double>(q_last);
    const auto expected = static_cast<std::int64_t>(std::floor(exact + 0.5));
    for (int limb = 0; limb < 2; ++limb) {
      const u64 q = ctx.q()[static_cast<std::size_t>(limb)].value;
      const u64 residue = expected >= 0 ? static_cast<u64>(expected) % q : q - static_cast<u64>(-expected) % q;
      EXPECT_EQ(out.limb(ctx, 0, limb)[k], residue) << "value " << values[k] << " limb " << limb;
    }
  }
  (void)n;
}

TEST(KeySwitch, HoistedEqualsSequentialOnMessage) {
  Fixture f(small_params(12, 3, 2));
  const Message m = f.random_message(1.0);
  const auto ct = f.encrypt(m);
  const auto keys = f.galois_keys({1, 2, 3});
  const std::vector<long> steps = {1, 2, 3};
  const auto hoisted = f.engine.rotate_hoisted(ct, steps, keys);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto single = f.decrypt(f.engine.rotate(ct, steps[i], keys));
    EXPECT_LT(max_error(single, f.decrypt(hoisted[i])), 1e-6);
  }
}

}  // namespace
}  // namespace fhelium::test
