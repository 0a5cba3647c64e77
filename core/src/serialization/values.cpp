// Plaintexts and ciphertexts: the state in the header, the residues
// (components x limbs x N words) as the payload; a fresh symmetric ciphertext
// may store c1 as its seed.
#include "serialization/values.hpp"

#include <istream>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/payload.hpp"
#include "serialization/state.hpp"

namespace fhelium {
namespace {

using namespace serialization;

void check_saving(const Context& ctx, const HostValue& v, ObjectKind kind, int min_components, int max_components) {
  const ValueState& s = v.state;
  if (s.context_id != ctx.id() || s.word_size != ctx.word_size() || s.level < 0 || s.level > ctx.max_level() ||
      s.components < min_components || s.components > max_components || v.data.size() != s.words(ctx)) {
    throw StateError("cannot save " + with_article(kind) + " " + s.describe() + " with " +
                     std::to_string(v.data.size()) + " words in context " + std::to_string(ctx.id()) + ": expected " +
                     std::to_string(min_components) + ".." + std::to_string(max_components) +
                     " components of this context, at most its level " + std::to_string(ctx.max_level()) +
                     ", with the matching word count");
  }
}

void save_value(std::ostream& out, const Context& ctx, const HostValue& v, ObjectKind kind, SaveOptions options) {
  Header h = base_header(ctx, kind);
  set_state(h, v.state);
  const ConstSegment all{v.data.data(), v.data.size() * sizeof(u64)};
  write_object(out, h, std::span(&all, 1), options);
}

// Limb-sized segments of components [0, components), each checked against its prime.
std::vector<Segment> limb_segments(const Context& ctx, HostValue& v, int components) {
  std::vector<Segment> segments;
  const std::vector<u64> moduli = serialization::value_moduli(ctx, v.state);
  const std::size_t bytes = ctx.ring_degree() * sizeof(u64);
  for (int c = 0; c < components; ++c) {
    for (std::size_t limb = 0; limb < moduli.size(); ++limb) {
      const int l = static_cast<int>(limb);
      segments.push_back({v.limb(ctx, c, l), bytes, moduli[limb], c, l});
    }
  }
  return segments;
}

HostValue load_value(std::istream& stream, const Context& ctx, ObjectKind kind, int min_components,
                     int max_components) {
  Input in(stream);
  return read_value_payload(in, ctx, read_value_header(in, ctx, kind, min_components, max_components));
}

}  // namespace

namespace serialization {

std::string describe_limb(int component, int limb) {
  return "component " + std::to_string(component) + ", limb " + std::to_string(limb);
}

ValueHeader read_value_header(Input& in, const Context& ctx, ObjectKind kind, int min_components, int max_components) {
  ValueHeader v;
  v.what = "the " + to_string(kind);
  v.read = read_header(in, kind);
  const Header& h = v.read.header;
  check_context(h, ctx);
  v.state = value_state(h, ctx, min_components, max_components, v.what);
  const bool seeded = h.seeded();
  if (seeded && !(kind == ObjectKind::ciphertext && v.state.components == 2 && v.state.basis == Basis::Q &&
                  v.state.domain == Domain::ntt)) {
    throw FormatError(v.what + " " + v.state.describe() +
                      " is flagged seeded; only a two-component Q-basis NTT-domain ciphertext has a seeded form");
  }
  const std::size_t limb_bytes = ctx.ring_degree() * sizeof(u64);
  const std::uint64_t expected = seeded ? static_cast<std::uint64_t>(v.state.limbs(ctx)) * limb_bytes + sizeof(Seed)
                                        : v.state.words(ctx) * sizeof(u64);
  check_sizes(h, expected, in.remaining(), v.what);
  return v;
}

std::vector<u64> value_moduli(const Context& ctx, const ValueState& state) {
  std::vector<u64> moduli;
  for (int limb = 0; limb < state.limbs(ctx); ++limb)
    moduli.push_back(ctx.key_modulus(state.key_limb(ctx, limb)).value);
  return moduli;
}

HostValue read_value_payload(Input& in, const Context& ctx, const ValueHeader& header) {
  const bool seeded = header.read.header.seeded();
  HostValue v;
  v.state = header.state;
  resize_for_load(v.data, v.state.words(ctx));
  auto segments = limb_segments(ctx, v, seeded ? 1 : v.state.components);
  Seed seed{};
  if (seeded) segments.push_back({seed.data(), seed.size()});
  read_object_payload(in, header.read, segments, describe_limb);
  if (seeded) {
    u64* const c1 = v.limb(ctx, 1, 0);
    expand_uniform(ctx, seed, v.state.limbs(ctx), std::span(&c1, 1), ctx.level_basis(v.state.level).first);
  }
  return v;
}

}  // namespace serialization

void save_plaintext(std::ostream& out, const Context& ctx, const HostValue& plaintext, SaveOptions options) {
  check_saving(ctx, plaintext, ObjectKind::plaintext, 1, 1);
  save_value(out, ctx, plaintext, ObjectKind::plaintext, options);
}

HostValue load_plaintext(std::istream& in, const Context& ctx) {
  return load_value(in, ctx, ObjectKind::plaintext, 1, 1);
}

void save_ciphertext(std::ostream& out, const Context& ctx, const HostValue& ciphertext, SaveOptions options) {
  check_saving(ctx, ciphertext, ObjectKind::ciphertext, 2, 3);
  save_value(out, ctx, ciphertext, ObjectKind::ciphertext, options);
}

void save_ciphertext(std::ostream& out, const Context& ctx, const SeededCiphertext& ciphertext, SaveOptions options) {
  const HostValue& v = ciphertext.value;
  check_saving(ctx, v, ObjectKind::ciphertext, 2, 2);
  if (v.state.basis != Basis::Q || v.state.domain != Domain::ntt) {
    throw StateError("cannot save the seeded form of ciphertext " + v.state.describe() +
                     ": expected a fresh symmetric ciphertext (basis Q, NTT domain)");
  }
  Header h = base_header(ctx, ObjectKind::ciphertext);
  set_state(h, v.state);
  h.flags = flag_seeded;
  const ConstSegment payload[] = {
      {v.data.data(), static_cast<std::size_t>(v.state.limbs(ctx)) * ctx.ring_degree() * sizeof(u64)},
      {ciphertext.a_seed.data(), ciphertext.a_seed.size()}};
  write_object(out, h, payload, options);
}

HostValue load_ciphertext(std::istream& in, const Context& ctx) {
  return load_value(in, ctx, ObjectKind::ciphertext, 2, 3);
}

}  // namespace fhelium
