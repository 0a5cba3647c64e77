// The public key (b, a) over QP: b in full, a in full or as its seed.
#include <istream>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/payload.hpp"
#include "serialization/state.hpp"

namespace fhelium {

using namespace serialization;

void save_public_key(std::ostream& out, const Context& ctx, const PublicKey& key, SaveOptions options) {
  const HostValue& v = key.value;
  if (!(v.state == key_state(ctx)) || v.data.size() != v.state.words(ctx)) {
    throw StateError("cannot save public key " + v.state.describe() + " with " + std::to_string(v.data.size()) +
                     " words: expected a key of context " + std::to_string(ctx.id()) + ", " +
                     key_state(ctx).describe() + " with " + std::to_string(key_state(ctx).words(ctx)) + " words");
  }
  Header h = base_header(ctx, ObjectKind::public_key);
  set_state(h, v.state);
  const std::size_t half = v.data.size() / 2 * sizeof(u64);
  std::vector<ConstSegment> payload = {{v.data.data(), half}};
  if (key.a_seed) {
    h.flags = flag_seeded;
    payload.push_back({key.a_seed->data(), key.a_seed->size()});
  } else {
    payload.push_back({v.limb(ctx, 1, 0), half});
  }
  write_object(out, h, payload, options);
}

PublicKey load_public_key(std::istream& stream, const Context& ctx) {
  const std::string what = "the public key";
  Input in(stream);
  const ReadHeader r = read_header(in, ObjectKind::public_key);
  const Header& h = r.header;
  check_context(h, ctx);
  check_key_state(h, ctx, 0, what);
  PublicKey key;
  key.value.state = key_state(ctx);
  const std::size_t half = key.value.state.words(ctx) / 2 * sizeof(u64);
  check_sizes(h, half + (h.seeded() ? sizeof(Seed) : half), in.remaining(), what);
  resize_for_load(key.value.data, key.value.state.words(ctx));
  std::vector<Segment> segments;
  for (int c = 0; c < (h.seeded() ? 1 : 2); ++c) {
    for (int limb = 0; limb < ctx.key_limbs(); ++limb) {
      segments.push_back(
          {key.value.limb(ctx, c, limb), ctx.ring_degree() * sizeof(u64), ctx.key_modulus(limb).value, c, limb});
    }
  }
  Seed seed{};
  if (h.seeded()) segments.push_back({seed.data(), seed.size()});
  read_object_payload(in, r, segments, [](int c, int limb) {
    return std::string(c == 0 ? "b" : "a") + ", key limb " + std::to_string(limb);
  });
  if (h.seeded()) {
    u64* const a = key.value.limb(ctx, 1, 0);
    expand_uniform(ctx, seed, ctx.key_limbs(), std::span(&a, 1));
    key.a_seed = seed;
  }
  return key;
}

}  // namespace fhelium
