#include "fhelium/keys.hpp"

#include <algorithm>
#include <string>

#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"

namespace fhelium {

SecretKey::SecretKey(std::uint64_t context_id, std::vector<std::int8_t> coefficients, std::vector<u64> ntt_qp,
                     std::vector<u64> ntt_qp_shoup)
    : context_id_(context_id),
      coefficients_(std::move(coefficients)),
      ntt_qp_(std::move(ntt_qp)),
      ntt_qp_shoup_(std::move(ntt_qp_shoup)) {}

SecretKey::~SecretKey() {
  // Wipe through volatile pointers so the stores are not elided.
  volatile std::int8_t* c = coefficients_.data();
  for (std::size_t i = 0; i < coefficients_.size(); ++i) c[i] = 0;
  for (auto* words : {&ntt_qp_, &ntt_qp_shoup_}) {
    volatile u64* s = words->data();
    for (std::size_t i = 0; i < words->size(); ++i) s[i] = 0;
  }
}

KeyGenerator::KeyGenerator(std::shared_ptr<const Context> context, Csprng& rng)
    : context_(std::move(context)), rng_(rng) {}

void KeyGenerator::check_context(const SecretKey& sk) const {
  if (sk.context_id() != context_->id()) {
    throw StateError("secret key belongs to context " + std::to_string(sk.context_id()) + ", expected context " +
                     std::to_string(context_->id()));
  }
}

SecretKey make_secret_key(const Context& ctx, std::vector<std::int8_t> coefficients) {
  const std::size_t n = ctx.ring_degree();
  if (coefficients.size() != n) {
    throw InvalidArgumentError("secret key has " + std::to_string(coefficients.size()) +
                               " coefficients, expected the ring degree " + std::to_string(n));
  }
  std::vector<std::int64_t> wide(coefficients.begin(), coefficients.end());
  std::vector<u64> ntt_qp(static_cast<std::size_t>(ctx.key_limbs()) * n);
  small_to_residues(ctx, wide, ntt_qp.data(), ctx.key_limbs());
  ntt_forward_limbs(ctx, ntt_qp.data(), ctx.key_limbs());
  std::fill(wide.begin(), wide.end(), 0);
  std::vector<u64> ntt_qp_shoup(ntt_qp.size());
  for (int limb = 0; limb < ctx.key_limbs(); ++limb) {
    const u64 q = ctx.key_modulus(limb).value;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = static_cast<std::size_t>(limb) * n + k;
      ntt_qp_shoup[i] = shoup(ntt_qp[i], q);
    }
  }
  return SecretKey(ctx.id(), std::move(coefficients), std::move(ntt_qp), std::move(ntt_qp_shoup));
}

SecretKey KeyGenerator::secret_key() {
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  const int weight = ctx.params().hamming_weight;
  std::vector<std::int8_t> coefficients;
  if (ctx.params().secret == SecretDistribution::gaussian) {
    const auto g = sample_gaussian(rng_, n, error_stddev);
    coefficients.assign(g.begin(), g.end());
  } else {
    coefficients = weight > 0 ? sample_sparse_ternary(rng_, n, weight) : sample_ternary(rng_, n);
  }
  return make_secret_key(ctx, std::move(coefficients));
}

PublicKey KeyGenerator::public_key(const SecretKey& sk) {
  check_context(sk);
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  const int limbs = ctx.key_limbs();
  PublicKey pk;
  pk.value.state = {ctx.id(), ctx.word_size(), ctx.max_level(), 1.0, Domain::ntt, Basis::QP, 2};
  pk.value.data.assign(pk.value.state.words(ctx), 0);
  // `a` comes from its own seed so that a saved key can store the seed instead.
  pk.a_seed = rng_.next_seed();
  u64* const a_block = pk.value.limb(ctx, 1, 0);
  expand_uniform(ctx, *pk.a_seed, limbs, std::span(&a_block, 1));
  const auto e = sample_gaussian(rng_, n, error_stddev);
  small_to_residues(ctx, e, pk.value.limb(ctx, 0, 0), limbs);
  ntt_forward_limbs(ctx, pk.value.limb(ctx, 0, 0), limbs);
  for (int limb = 0; limb < limbs; ++limb) {
    const Modulus& q = ctx.key_modulus(limb);
    u64* b = pk.value.limb(ctx, 0, limb);
    u64* a = pk.value.limb(ctx, 1, limb);
    const u64* s = sk.ntt_qp().data() + static_cast<std::size_t>(limb) * n;
    for (std::size_t k = 0; k < n; ++k) b[k] = sub_mod(b[k], mul_mod(a[k], s[k], q), q.value);
  }
  return pk;
}

HostSwitchKey KeyGenerator::switch_key(const SecretKey& sk, std::span<const u64> source) {
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  const int key_limbs = ctx.key_limbs();
  const int alpha = ctx.digit_size();
  HostSwitchKey key;
  key.context_id = ctx.id();
  key.digits = ctx.key_digits();
  const std::size_t digit_words = 2 * static_cast<std::size_t>(key_limbs) * n;
  key.data.assign(static_cast<std::size_t>(key.digits) * digit_words, 0);
  // Every a_j comes from one seed so that a saved key can store the seed instead.
  key.a_seed = rng_.next_seed();
  std::vector<u64*> a_blocks;
  for (int j = 0; j < key.digits; ++j) {
    u64* b = key.data.data() + static_cast<std::size_t>(j) * digit_words;
    a_blocks.push_back(b + static_cast<std::size_t>(key_limbs) * n);
  }
  expand_uniform(ctx, *key.a_seed, key_limbs, a_blocks);

  // [P]_{q_i} for the gadget factor on the primes of each digit.
  std::vector<u64> p_mod_q(static_cast<std::size_t>(ctx.q_count()));
  for (std::size_t i = 0; i < p_mod_q.size(); ++i) {
    u64 p = 1;
    for (const Modulus& pk : ctx.p()) p = mul_mod(p, pk.value % ctx.q()[i].value, ctx.q()[i]);
    p_mod_q[i] = p;
  }

  for (int j = 0; j < key.digits; ++j) {
    u64* b = key.data.data() + static_cast<std::size_t>(j) * digit_words;
    u64* a = b + static_cast<std::size_t>(key_limbs) * n;
    const auto e = sample_gaussian(rng_, n, error_stddev);
    small_to_residues(ctx, e, b, key_limbs);
    ntt_forward_limbs(ctx, b, key_limbs);
    for (int limb = 0; limb < key_limbs; ++limb) {
      const Modulus& q = ctx.key_modulus(limb);
      const auto offset = static_cast<std::size_t>(limb) * n;
      const u64* s = sk.ntt_qp().data() + offset;
      const bool in_digit = limb < ctx.q_count() && limb / alpha == j;
      for (std::size_t k = 0; k < n; ++k) {
        u64 value = sub_mod(b[offset + k], mul_mod(a[offset + k], s[k], q), q.value);
        if (in_digit) value = add_mod(value, mul_mod(p_mod_q[static_cast<std::size_t>(limb)], source[offset + k], q), q.value);
        b[offset + k] = value;
      }
    }
  }
  return key;
}

HostSwitchKey KeyGenerator::relinearization_key(const SecretKey& sk) {
  check_context(sk);
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  std::vector<u64> square(sk.ntt_qp().size());
  for (int limb = 0; limb < ctx.key_limbs(); ++limb) {
    const Modulus& q = ctx.key_modulus(limb);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = static_cast<std::size_t>(limb) * n + k;
      square[i] = mul_mod(sk.ntt_qp()[i], sk.ntt_qp()[i], q);
    }
  }
  auto key = switch_key(sk, square);
  std::fill(square.begin(), square.end(), 0);
  return key;
}

HostSwitchKey KeyGenerator::switching_key(const SecretKey& from, const SecretKey& to) {
  check_context(from);
  check_context(to);
  return switch_key(to, from.ntt_qp());
}

HostSwitchKey KeyGenerator::galois_key(const SecretKey& sk, std::uint32_t galois_element) {
  check_context(sk);
  const Context& ctx = *context_;
  const std::size_t n = ctx.ring_degree();
  if (galois_element % 2 == 0 || galois_element >= 2 * n) {
    throw InvalidArgumentError("galois element " + std::to_string(galois_element) +
                               " is invalid: expected an odd number below 2N = " + std::to_string(2 * n));
  }
  const auto perm = ctx.ntt_automorphism_permutation(galois_element);
  std::vector<u64> rotated(sk.ntt_qp().size());
  for (int limb = 0; limb < ctx.key_limbs(); ++limb) {
    const u64* s = sk.ntt_qp().data() + static_cast<std::size_t>(limb) * n;
    u64* out = rotated.data() + static_cast<std::size_t>(limb) * n;
    for (std::size_t k = 0; k < n; ++k) out[k] = s[perm[k]];
  }
  auto key = switch_key(sk, rotated);
  key.galois_element = galois_element;
  std::fill(rotated.begin(), rotated.end(), 0);
  return key;
}

}  // namespace fhelium
