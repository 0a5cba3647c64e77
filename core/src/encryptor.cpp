#include "fhelium/encryptor.hpp"

#include <string>

#include "fhelium/error.hpp"

namespace fhelium {

void ntt_forward_limbs(const Context& context, u64* data, int limbs, int first_key_limb) {
  for (int i = 0; i < limbs; ++i) {
    context.ntt(first_key_limb + i).forward(data + static_cast<std::size_t>(i) * context.ring_degree());
  }
}

void ntt_inverse_limbs(const Context& context, u64* data, int limbs, int first_key_limb) {
  for (int i = 0; i < limbs; ++i) {
    context.ntt(first_key_limb + i).inverse(data + static_cast<std::size_t>(i) * context.ring_degree());
  }
}

void small_to_residues(const Context& context, std::span<const std::int64_t> small, u64* out, int limbs,
                       int first_key_limb) {
  const std::size_t n = context.ring_degree();
  for (int i = 0; i < limbs; ++i) {
    const u64 q = context.key_modulus(first_key_limb + i).value;
    u64* limb = out + static_cast<std::size_t>(i) * n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t x = small[k];
      const u64 magnitude = x >= 0 ? static_cast<u64>(x) : static_cast<u64>(-(x + 1)) + 1;
      // Secrets and errors are far below q: skip the division for them.
      const u64 reduced = magnitude < q ? magnitude : magnitude % q;
      limb[k] = x >= 0 ? reduced : neg_mod(reduced, q);
    }
  }
}

namespace {

// Signed small coefficients to NTT-form residues on Q_l P.
void small_to_ntt_qp(const Context& ctx, std::span<const std::int64_t> small, u64* out, int level) {
  const auto [first, q_limbs] = ctx.level_basis(level);
  u64* p_part = out + static_cast<std::size_t>(q_limbs) * ctx.ring_degree();
  small_to_residues(ctx, small, out, q_limbs, first);
  small_to_residues(ctx, small, p_part, ctx.special_count(), ctx.q_count());
  ntt_forward_limbs(ctx, out, q_limbs, first);
  ntt_forward_limbs(ctx, p_part, ctx.special_count(), ctx.q_count());
}

// out = round(x / P) on Q_l, for x given in NTT form on Q_l P (its P limbs
// are overwritten). The P part is lifted exactly to its centered
// representative r in (-P/2, P/2], so (x - r) / P is x / P rounded to the
// nearest integer.
void divide_by_p_rounded(const Context& ctx, int level, u64* x, u64* out) {
  const std::size_t n = ctx.ring_degree();
  const auto [first, q_limbs] = ctx.level_basis(level);
  const KeySwitchLevel& tables = ctx.key_switch(level);
  u64* p_part = x + static_cast<std::size_t>(q_limbs) * n;
  ntt_inverse_limbs(ctx, p_part, ctx.special_count(), ctx.q_count());
  tables.mod_down.convert(p_part, out, n, 0, n);
  ntt_forward_limbs(ctx, out, q_limbs, first);
  for (int limb = 0; limb < q_limbs; ++limb) {
    const auto i = static_cast<std::size_t>(limb);
    const u64 q = ctx.level_modulus(level, limb).value;
    const u64* xi = x + i * n;
    u64* oi = out + i * n;
    for (std::size_t k = 0; k < n; ++k) {
      oi[k] = mul_shoup(sub_mod(xi[k], oi[k], q), tables.p_inverse[i], tables.p_inverse_shoup[i], q);
    }
  }
}

void check_plaintext(const Context& ctx, const HostValue& pt) {
  const ValueState& s = pt.state;
  if (s.context_id != ctx.id() || s.components != 1 || s.basis != Basis::Q || s.level < 0 ||
      s.level > ctx.max_level() || pt.data.size() != s.words(ctx)) {
    throw StateError("encrypt expects a one-component Q-basis plaintext of context " + std::to_string(ctx.id()) +
                     " at level 0.." + std::to_string(ctx.max_level()) + ", got " + s.describe());
  }
}

}  // namespace

Encryptor::Encryptor(std::shared_ptr<const Context> context, Csprng& rng) : context_(std::move(context)), rng_(rng) {}

HostValue Encryptor::prepare_plaintext(const HostValue& plaintext) const {
  check_plaintext(*context_, plaintext);
  HostValue m = plaintext;
  if (m.state.domain == Domain::coefficient) {
    const LevelBasis basis = context_->level_basis(m.state.level);
    ntt_forward_limbs(*context_, m.data.data(), basis.count, basis.first);
    m.state.domain = Domain::ntt;
  }
  return m;
}

HostValue Encryptor::encrypt(const HostValue& plaintext, const PublicKey& pk) {
  const Context& ctx = *context_;
  const ValueState& key_state = pk.value.state;
  if (key_state.context_id != ctx.id()) {
    throw StateError("public key belongs to context " + std::to_string(key_state.context_id) +
                     ", expected context " + std::to_string(ctx.id()));
  }
  if (key_state.basis != Basis::QP || key_state.level != ctx.max_level() || key_state.components != 2 ||
      pk.value.data.size() != key_state.words(ctx)) {
    throw StateError("public key is " + key_state.describe() + ", expected two QP-basis components at level " +
                     std::to_string(ctx.max_level()));
  }
  const HostValue m = prepare_plaintext(plaintext);
  const int level = m.state.level;
  ValueState qp = m.state;  // the basis Q_l P the encryption of zero lives on
  qp.basis = Basis::QP;
  const int limbs = qp.limbs(ctx);
  const std::size_t n = ctx.ring_degree();
  const std::size_t qp_words = static_cast<std::size_t>(limbs) * n;

  // (b u + e0, a u + e1) on Q_l P, then divided by P with rounding: the
  // noise u e + e0 + e1 s shrinks by P and the rounding is what is left.
  auto u_small = sample_ternary(rng_, n);
  std::vector<std::int64_t> u_wide(u_small.begin(), u_small.end());
  std::vector<u64> u(qp_words), e0(qp_words), e1(qp_words);
  small_to_ntt_qp(ctx, u_wide, u.data(), level);
  small_to_ntt_qp(ctx, sample_gaussian(rng_, n, error_stddev), e0.data(), level);
  small_to_ntt_qp(ctx, sample_gaussian(rng_, n, error_stddev), e1.data(), level);
  std::vector<u64> zero(2 * qp_words);
  for (int limb = 0; limb < limbs; ++limb) {
    const int key_limb = qp.key_limb(ctx, limb);
    const Modulus& q = ctx.key_modulus(key_limb);
    const u64* b = pk.value.limb(ctx, 0, key_limb);
    const u64* a = pk.value.limb(ctx, 1, key_limb);
    const std::size_t off = static_cast<std::size_t>(limb) * n;
    for (std::size_t k = 0; k < n; ++k) {
      zero[off + k] = add_mod(mul_mod(b[k], u[off + k], q), e0[off + k], q.value);
      zero[qp_words + off + k] = add_mod(mul_mod(a[k], u[off + k], q), e1[off + k], q.value);
    }
  }
  std::fill(u.begin(), u.end(), 0);
  std::fill(u_wide.begin(), u_wide.end(), 0);

  HostValue ct;
  ct.state = m.state;
  ct.state.components = 2;
  ct.data.assign(ct.state.words(ctx), 0);
  for (int c = 0; c < 2; ++c) divide_by_p_rounded(ctx, level, zero.data() + c * qp_words, ct.limb(ctx, c, 0));
  for (int limb = 0; limb < ctx.level_basis(level).count; ++limb) {
    const u64 q = ctx.level_modulus(level, limb).value;
    const u64* mm = m.limb(ctx, 0, limb);
    u64* c0 = ct.limb(ctx, 0, limb);
    for (std::size_t k = 0; k < n; ++k) c0[k] = add_mod(c0[k], mm[k], q);
  }
  return ct;
}

HostValue Encryptor::encrypt_symmetric(const HostValue& plaintext, const SecretKey& sk) {
  return encrypt_symmetric_seeded(plaintext, sk).value;
}

SeededCiphertext Encryptor::encrypt_symmetric_seeded(const HostValue& plaintext, const SecretKey& sk) {
  const Context& ctx = *context_;
  if (sk.context_id() != ctx.id()) {
    throw StateError("secret key belongs to context " + std::to_string(sk.context_id()) + ", expected context " +
                     std::to_string(ctx.id()));
  }
  const HostValue m = prepare_plaintext(plaintext);
  const auto [first, limbs] = ctx.level_basis(m.state.level);
  const std::size_t n = ctx.ring_degree();
  SeededCiphertext out;
  HostValue& ct = out.value;
  ct.state = m.state;
  ct.state.components = 2;
  ct.data.assign(ct.state.words(ctx), 0);
  // c1 = a comes from its own seed so that a saved ciphertext can store the seed instead.
  out.a_seed = rng_.next_seed();
  u64* const c1_block = ct.limb(ctx, 1, 0);
  expand_uniform(ctx, out.a_seed, limbs, std::span(&c1_block, 1), first);
  small_to_residues(ctx, sample_gaussian(rng_, n, error_stddev), ct.limb(ctx, 0, 0), limbs, first);
  ntt_forward_limbs(ctx, ct.limb(ctx, 0, 0), limbs, first);
  for (int limb = 0; limb < limbs; ++limb) {
    const Modulus& q = ctx.key_modulus(first + limb);
    const u64* s = sk.ntt_qp().data() + static_cast<std::size_t>(first + limb) * n;
    const u64* mm = m.limb(ctx, 0, limb);
    u64* c0 = ct.limb(ctx, 0, limb);
    const u64* c1 = ct.limb(ctx, 1, limb);
    for (std::size_t k = 0; k < n; ++k) {
      c0[k] = add_mod(sub_mod(c0[k], mul_mod(c1[k], s[k], q), q.value), mm[k], q.value);
    }
  }
  return out;
}

Decryptor::Decryptor(std::shared_ptr<const Context> context) : context_(std::move(context)) {}

HostValue Decryptor::decrypt(const HostValue& ciphertext, const SecretKey& sk) const {
  const Context& ctx = *context_;
  const ValueState& st = ciphertext.state;
  if (st.context_id != ctx.id() || sk.context_id() != ctx.id()) {
    throw StateError("decrypt expects ciphertext and secret key of context " + std::to_string(ctx.id()) +
                     ", got ciphertext " + st.describe() + " and a key of context " + std::to_string(sk.context_id()));
  }
  if (st.basis != Basis::Q || st.components < 2 || st.components > 3 || st.level < 0 || st.level > ctx.max_level() ||
      ciphertext.data.size() != st.words(ctx)) {
    throw StateError("decrypt expects a Q-basis ciphertext with 2 or 3 components at level 0.." +
                     std::to_string(ctx.max_level()) + ", got " + st.describe());
  }
  const auto [first, limbs] = ctx.level_basis(st.level);
  const std::size_t n = ctx.ring_degree();
  HostValue converted;  // only for a coefficient-domain input
  if (st.domain == Domain::coefficient) {
    converted = ciphertext;
    for (int c = 0; c < st.components; ++c) ntt_forward_limbs(ctx, converted.limb(ctx, c, 0), limbs, first);
  }
  const HostValue& ct = st.domain == Domain::coefficient ? converted : ciphertext;
  HostValue pt;
  pt.state = st;
  pt.state.components = 1;
  pt.state.domain = Domain::ntt;
  pt.data.assign(pt.state.words(ctx), 0);
  for (int limb = 0; limb < limbs; ++limb) {
    const Modulus& q = ctx.key_modulus(first + limb);
    const u64* s = sk.ntt_qp().data() + static_cast<std::size_t>(first + limb) * n;
    const u64* s_shoup = sk.ntt_qp_shoup().data() + static_cast<std::size_t>(first + limb) * n;
    u64* out = pt.limb(ctx, 0, limb);
    // Horner in s: c0 + s (c1 + s c2); the first step reads the top
    // component, so nothing is copied.
    const u64* partial = ct.limb(ctx, st.components - 1, limb);
    for (int c = st.components - 2; c >= 0; --c) {
      const u64* component = ct.limb(ctx, c, limb);
      for (std::size_t k = 0; k < n; ++k) {
        out[k] = add_mod(mul_shoup(partial[k], s[k], s_shoup[k], q.value), component[k], q.value);
      }
      partial = out;
    }
  }
  if (st.domain == Domain::coefficient) {
    ntt_inverse_limbs(ctx, pt.data.data(), limbs, first);
    pt.state.domain = Domain::coefficient;
  }
  return pt;
}

}  // namespace fhelium
