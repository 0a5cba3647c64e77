// The relinearization key: one switching key, seeded when it has its seed.
#include <istream>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/state.hpp"
#include "serialization/switch_key_payload.hpp"

namespace fhelium {

using namespace serialization;

void save_relinearization_key(std::ostream& out, const Context& ctx, const HostSwitchKey& key, SaveOptions options) {
  if (key.galois_element != 0) {
    throw InvalidArgumentError("save_relinearization_key: got a Galois key (element " +
                               std::to_string(key.galois_element) + "), expected a relinearization key");
  }
  check_saving_switch_key(ctx, key, "the relinearization key");
  Header h = base_header(ctx, ObjectKind::relinearization_key);
  set_state(h, key_state(ctx));
  h.digits = static_cast<std::uint32_t>(ctx.key_digits());
  if (key.a_seed) h.flags = flag_seeded;
  write_object(out, h, switch_key_segments(ctx, key), options);
}

namespace serialization {

ReadHeader read_relinearization_key_header(Input& in, const Context& ctx) {
  const std::string what = "the relinearization key";
  const ReadHeader r = read_header(in, ObjectKind::relinearization_key);
  const Header& h = r.header;
  check_context(h, ctx);
  check_key_state(h, ctx, static_cast<std::uint32_t>(ctx.key_digits()), what);
  check_sizes(h, switch_key_payload_bytes(ctx, h.seeded()), in.remaining(), what);
  return r;
}

HostSwitchKey read_relinearization_key_payload(Input& in, const Context& ctx, const ReadHeader& r) {
  HostSwitchKey key = empty_switch_key(ctx, 0);
  Seed seed{};
  SeededExpansion expansion(in, ctx, key, r.header.flags);
  read_object_payload(in, r, switch_key_segments(ctx, key, r.header.seeded(), seed), describe_switch_key_part);
  expansion.finish(seed);
  return key;
}

}  // namespace serialization

HostSwitchKey load_relinearization_key(std::istream& stream, const Context& ctx) {
  Input in(stream);
  return read_relinearization_key_payload(in, ctx, read_relinearization_key_header(in, ctx));
}

}  // namespace fhelium
