// Loaders into an engine: the payload goes through StreamedPayload into the
// memory the engine's backend lends, with no host copy of the object. Seeded
// forms are expanded on the host first (their seed sits after the halves the
// backend would take first).
#include "fhelium/error.hpp"
#include "serialization/streamed_payload.hpp"
#include "serialization/switch_key_payload.hpp"
#include "serialization/values.hpp"

namespace fhelium {

using namespace serialization;

Ciphertext load_ciphertext(std::istream& stream, const Engine& engine) {
  const Context& ctx = engine.context();
  Input in(stream);
  const ValueHeader header = read_value_header(in, ctx, ObjectKind::ciphertext, 2, 3);
  if (header.read.header.seeded()) return engine.upload_ciphertext(read_value_payload(in, ctx, header));
  StreamedPayload payload(in, header.read, ctx.ring_degree(), value_moduli(ctx, header.state), describe_limb);
  Ciphertext ct = engine.upload_ciphertext(
      header.state, [&](std::span<std::byte> chunk, std::size_t offset) { payload.fill(chunk, offset); });
  payload.finish();
  return ct;
}

RelinKey load_relinearization_key(std::istream& stream, const Engine& engine) {
  const Context& ctx = engine.context();
  Input in(stream);
  const ReadHeader header = read_relinearization_key_header(in, ctx);
  if (header.header.seeded()) {
    return engine.upload_relinearization_key(read_relinearization_key_payload(in, ctx, header));
  }
  StreamedPayload payload(in, header, ctx.ring_degree(), key_moduli(ctx), describe_switch_key_part);
  RelinKey key = engine.upload_relinearization_key(
      [&](std::span<std::byte> chunk, std::size_t offset) { payload.fill(chunk, offset); });
  payload.finish();
  return key;
}

}  // namespace fhelium
