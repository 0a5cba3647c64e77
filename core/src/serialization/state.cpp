#include "serialization/state.hpp"

#include <bit>
#include <cmath>

#include "fhelium/error.hpp"

namespace fhelium::serialization {
namespace {

void expect_field(const char* field, std::uint64_t value, std::uint64_t expected, const std::string& what) {
  if (value != expected) {
    throw FormatError(what + " has " + field + " " + std::to_string(value) + " in its header, expected " +
                      std::to_string(expected));
  }
}

}  // namespace

Header base_header(const Context& context, ObjectKind kind) {
  Header h;
  h.kind = static_cast<std::uint16_t>(kind);
  h.word_bits = static_cast<std::uint8_t>(context.word_size());
  h.fingerprint = context_fingerprint(context);
  return h;
}

void set_state(Header& h, const ValueState& s) {
  h.level = static_cast<std::uint32_t>(s.level);
  h.domain = static_cast<std::uint8_t>(s.domain);
  h.basis = static_cast<std::uint8_t>(s.basis);
  h.components = static_cast<std::uint8_t>(s.components);
  h.scale = s.scale;
}

ValueState value_state(const Header& h, const Context& context, int min_components, int max_components,
                       const std::string& what) {
  if (h.level > static_cast<std::uint32_t>(context.max_level())) {
    throw FormatError(what + " is at level " + std::to_string(h.level) + ", above the context's maximum level " +
                      std::to_string(context.max_level()));
  }
  if (h.domain > static_cast<std::uint8_t>(Domain::ntt)) {
    throw FormatError(what + " has domain " + std::to_string(h.domain) + ", expected 0 (coefficient) or 1 (NTT)");
  }
  if (h.basis > static_cast<std::uint8_t>(Basis::QP)) {
    throw FormatError(what + " has basis " + std::to_string(h.basis) + ", expected 0 (Q) or 1 (QP)");
  }
  if (h.components < min_components || h.components > max_components) {
    throw FormatError(what + " has " + std::to_string(h.components) + " components, expected " +
                      std::to_string(min_components) +
                      (min_components == max_components ? "" : ".." + std::to_string(max_components)));
  }
  if (!std::isfinite(h.scale) || !(h.scale > 0)) {
    throw FormatError(what + " has scale " + std::to_string(h.scale) + ", expected a finite positive number");
  }
  expect_field("digits", h.digits, 0, what);
  expect_field("entries", h.entries, 0, what);
  ValueState s;
  s.context_id = context.id();
  s.word_size = context.word_size();
  s.level = static_cast<int>(h.level);
  s.scale = h.scale;
  s.domain = static_cast<Domain>(h.domain);
  s.basis = static_cast<Basis>(h.basis);
  s.components = h.components;
  return s;
}

ValueState key_state(const Context& context) {
  return {context.id(), context.word_size(), context.max_level(), 1.0, Domain::ntt, Basis::QP, 2};
}

void check_key_state(const Header& h, const Context& context, std::uint32_t digits, const std::string& what) {
  Header state_only = h;
  state_only.digits = 0;
  state_only.entries = 0;
  const ValueState s = value_state(state_only, context, 2, 2, what);
  if (!(s == key_state(context))) {
    throw FormatError(what + " has the state " + s.describe() + ", expected a key's " + key_state(context).describe());
  }
  expect_field("digits", h.digits, digits, what);
  if (h.object_kind() != ObjectKind::galois_keys && h.object_kind() != ObjectKind::sparse_encapsulation_keys) {
    expect_field("entries", h.entries, 0, what);
  }
}

void check_no_state(const Header& h, const std::string& what) {
  expect_field("level", h.level, 0, what);
  expect_field("domain", h.domain, 0, what);
  expect_field("basis", h.basis, 0, what);
  expect_field("components", h.components, 0, what);
  expect_field("scale bits", std::bit_cast<std::uint64_t>(h.scale), 0, what);
  expect_field("digits", h.digits, 0, what);
  expect_field("entries", h.entries, 0, what);
}

void check_not_seeded(const Header& h, const std::string& what) {
  if (h.seeded()) throw FormatError(what + " is flagged seeded, but it has no seeded form");
}

}  // namespace fhelium::serialization
