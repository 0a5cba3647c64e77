#include "serialization/switch_key_payload.hpp"

#include "fhelium/error.hpp"

namespace fhelium::serialization {
namespace {

std::size_t limb_bytes(const Context& ctx) { return ctx.ring_degree() * sizeof(u64); }
std::size_t half_bytes(const Context& ctx) { return static_cast<std::size_t>(ctx.key_limbs()) * limb_bytes(ctx); }

// b_j or a_j of digit j, key_limbs x N words.
template <class Word>
Word* half(const Context& ctx, Word* data, int digit, int which) {
  return data + (2 * static_cast<std::size_t>(digit) + static_cast<std::size_t>(which)) *
                    static_cast<std::size_t>(ctx.key_limbs()) * ctx.ring_degree();
}

}  // namespace

void check_saving_switch_key(const Context& ctx, const HostSwitchKey& key, const std::string& what) {
  if (key.context_id != ctx.id() || key.digits != ctx.key_digits() || key.data.size() != ctx.key_words()) {
    throw StateError("cannot save " + what + " of context " + std::to_string(key.context_id) + " with " +
                     std::to_string(key.digits) + " digits and " + std::to_string(key.data.size()) +
                     " words: expected context " + std::to_string(ctx.id()) + ", " + std::to_string(ctx.key_digits()) +
                     " digits, " + std::to_string(ctx.key_words()) + " words");
  }
}

std::uint64_t switch_key_payload_bytes(const Context& ctx, bool seeded) {
  const auto digits = static_cast<std::uint64_t>(ctx.key_digits());
  return seeded ? digits * half_bytes(ctx) + sizeof(Seed) : 2 * digits * half_bytes(ctx);
}

std::vector<ConstSegment> switch_key_segments(const Context& ctx, const HostSwitchKey& key) {
  if (!key.a_seed) return {{key.data.data(), key.data.size() * sizeof(u64)}};
  std::vector<ConstSegment> segments;
  for (int j = 0; j < key.digits; ++j) segments.push_back({half(ctx, key.data.data(), j, 0), half_bytes(ctx)});
  segments.push_back({key.a_seed->data(), key.a_seed->size()});
  return segments;
}

HostSwitchKey empty_switch_key(const Context& ctx, std::uint32_t galois_element) {
  HostSwitchKey key;
  key.context_id = ctx.id();
  key.digits = ctx.key_digits();
  key.galois_element = galois_element;
  resize_for_load(key.data, ctx.key_words());
  return key;
}

std::vector<u64> key_moduli(const Context& ctx) {
  std::vector<u64> moduli;
  for (int limb = 0; limb < ctx.key_limbs(); ++limb) moduli.push_back(ctx.key_modulus(limb).value);
  return moduli;
}

std::vector<Segment> switch_key_segments(const Context& ctx, HostSwitchKey& key, bool seeded, Seed& seed) {
  std::vector<Segment> segments;
  const std::vector<u64> moduli = key_moduli(ctx);
  for (int j = 0; j < key.digits; ++j) {
    for (int which = 0; which < (seeded ? 1 : 2); ++which) {
      u64* first = half(ctx, key.data.data(), j, which);
      for (std::size_t limb = 0; limb < moduli.size(); ++limb) {
        segments.push_back(
            {first + limb * ctx.ring_degree(), limb_bytes(ctx), moduli[limb], 2 * j + which, static_cast<int>(limb)});
      }
    }
  }
  if (seeded) segments.push_back({seed.data(), seed.size()});
  return segments;
}

void finish_switch_key(const Context& ctx, HostSwitchKey& key, bool seeded, const Seed& seed) {
  if (!seeded) return;
  std::vector<u64*> blocks;
  for (int j = 0; j < key.digits; ++j) blocks.push_back(half(ctx, key.data.data(), j, 1));
  expand_uniform(ctx, seed, ctx.key_limbs(), blocks);
  key.a_seed = seed;
}

SeededExpansion::SeededExpansion(Input& in, const Context& ctx, HostSwitchKey& key, std::uint16_t flags)
    : context_(ctx), key_(key), seeded_((flags & flag_seeded) != 0) {
  if (!seeded_ || (flags & flag_compressed) != 0) return;
  const std::uint64_t seed_at = switch_key_payload_bytes(ctx, true) - sizeof(Seed);
  if (!in.peek(seed_at, early_seed_.data(), early_seed_.size())) return;
  worker_ = std::thread([this] {
    try {
      finish_switch_key(context_, key_, true, early_seed_);
    } catch (...) {
      failure_ = std::current_exception();
    }
  });
}

SeededExpansion::~SeededExpansion() { join(); }

void SeededExpansion::join() {
  if (worker_.joinable()) worker_.join();
}

void SeededExpansion::finish(const Seed& seed) {
  if (!worker_.joinable()) {
    finish_switch_key(context_, key_, seeded_, seed);
    return;
  }
  join();
  if (failure_) std::rethrow_exception(failure_);
  // The check matched the payload read in order; a seed read ahead that
  // differs means the input changed between the two reads.
  if (seed != early_seed_) throw IoError("the input changed while it was read: its seed differs from the one read ahead");
}

std::string describe_switch_key_part(int part, int limb) {
  return "digit " + std::to_string(part / 2) + (part % 2 == 0 ? " b" : " a") + ", key limb " + std::to_string(limb);
}

}  // namespace fhelium::serialization
