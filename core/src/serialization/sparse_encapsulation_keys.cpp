// The sparse-secret encapsulation's two switching keys in one object: the
// key to the sparse secret (in the low context q_0 p_0, rebuilt from the
// caller's context) then the key back (in the caller's context), each seeded
// when the object is. The header's `entries` holds the ephemeral secret's
// Hamming weight, which sets the bootstrap's bound K.
#include <istream>
#include <optional>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/state.hpp"
#include "serialization/switch_key_payload.hpp"

namespace fhelium {

using namespace serialization;

namespace {

const std::string what = "the sparse-secret encapsulation keys";

bool seeded(const SparseEncapsulationKeys& keys) {
  return keys.dense_to_sparse.a_seed.has_value() && keys.sparse_to_dense.a_seed.has_value();
}

// Hamming weights a sparse secret of ring degree N can have.
void check_hamming_weight(std::uint64_t h, const Context& ctx) {
  if (h < 1 || h > ctx.ring_degree()) {
    throw FormatError(what + " declare a Hamming weight of " + std::to_string(h) + ", expected 1.." +
                      std::to_string(ctx.ring_degree()));
  }
}

}  // namespace

void save_sparse_encapsulation_keys(std::ostream& out, const Context& ctx, const SparseEncapsulationKeys& keys,
                                    SaveOptions options) {
  if (!keys.low_context) throw InvalidArgumentError("cannot save " + what + " without their low context");
  check_hamming_weight(static_cast<std::uint64_t>(keys.hamming_weight), ctx);
  const auto low = encapsulation_low_context(ctx);
  if (context_fingerprint(*keys.low_context) != context_fingerprint(*low)) {
    throw StateError("cannot save " + what + ": their low context (fingerprint " +
                     to_hex(context_fingerprint(*keys.low_context), 8) + ") is not this context's (" +
                     to_hex(context_fingerprint(*low), 8) + ")");
  }
  check_saving_switch_key(*keys.low_context, keys.dense_to_sparse, "the key to the sparse secret");
  check_saving_switch_key(ctx, keys.sparse_to_dense, "the key back to the dense secret");

  // Both seeded, or both stored whole (a key whose seed is dropped is copied).
  const bool with_seeds = seeded(keys);
  std::optional<HostSwitchKey> low_whole, main_whole;
  const auto whole = [&](const HostSwitchKey& key, std::optional<HostSwitchKey>& copy) -> const HostSwitchKey& {
    if (with_seeds || !key.a_seed) return key;
    copy = key;
    copy->a_seed.reset();
    return *copy;
  };
  const HostSwitchKey& low_key = whole(keys.dense_to_sparse, low_whole);
  const HostSwitchKey& main_key = whole(keys.sparse_to_dense, main_whole);
  Header h = base_header(ctx, ObjectKind::sparse_encapsulation_keys);
  set_state(h, key_state(ctx));
  h.digits = static_cast<std::uint32_t>(ctx.key_digits());
  h.entries = static_cast<std::uint32_t>(keys.hamming_weight);
  if (with_seeds) h.flags = flag_seeded;
  std::vector<ConstSegment> segments = switch_key_segments(*keys.low_context, low_key);
  for (const ConstSegment& s : switch_key_segments(ctx, main_key)) segments.push_back(s);
  write_object(out, h, segments, options);
}

SparseEncapsulationKeys load_sparse_encapsulation_keys(std::istream& stream, const Context& ctx) {
  Input in(stream);
  const ReadHeader r = read_header(in, ObjectKind::sparse_encapsulation_keys);
  const Header& h = r.header;
  check_context(h, ctx);
  check_key_state(h, ctx, static_cast<std::uint32_t>(ctx.key_digits()), what);
  check_hamming_weight(h.entries, ctx);
  SparseEncapsulationKeys keys;
  keys.hamming_weight = static_cast<int>(h.entries);
  keys.low_context = encapsulation_low_context(ctx);
  const Context& low = *keys.low_context;
  check_sizes(h, switch_key_payload_bytes(low, h.seeded()) + switch_key_payload_bytes(ctx, h.seeded()), in.remaining(),
              what);

  keys.dense_to_sparse = empty_switch_key(low, 0);
  keys.sparse_to_dense = empty_switch_key(ctx, 0);
  Seed low_seed{}, main_seed{};
  std::vector<Segment> segments = switch_key_segments(low, keys.dense_to_sparse, h.seeded(), low_seed);
  const int low_parts = 2 * low.key_digits();
  for (Segment s : switch_key_segments(ctx, keys.sparse_to_dense, h.seeded(), main_seed)) {
    s.part += low_parts;
    segments.push_back(s);
  }
  read_object_payload(in, r, segments, [low_parts](int part, int limb) {
    return part < low_parts ? "the key to the sparse secret, " + describe_switch_key_part(part, limb)
                            : "the key back, " + describe_switch_key_part(part - low_parts, limb);
  });
  finish_switch_key(low, keys.dense_to_sparse, h.seeded(), low_seed);
  finish_switch_key(ctx, keys.sparse_to_dense, h.seeded(), main_seed);
  return keys;
}

}  // namespace fhelium
