#include "serialization/framing.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <istream>

#include "fhelium/error.hpp"
#include "serialization/checksum.hpp"
#include "serialization/little_endian.hpp"

namespace fhelium::serialization {
namespace {

struct Field {
  std::size_t offset;
  std::size_t size;
  const char* name;
};

// Every header field, in order (docs/serialization.md).
constexpr Field fields[] = {
    {0, 8, "magic"},
    {8, 2, "format version"},
    {10, 2, "object kind"},
    {12, 2, "flags"},
    {14, 1, "word size"},
    {15, 1, "reserved"},
    {16, 32, "context fingerprint"},
    {48, 4, "level"},
    {52, 1, "domain"},
    {53, 1, "basis"},
    {54, 1, "components"},
    {55, 1, "reserved"},
    {56, 8, "scale"},
    {64, 4, "digits"},
    {68, 4, "entries"},
    {72, 8, "payload size"},
    {80, 8, "stored size"},
    {88, 8, "header check"},
};
constexpr std::size_t checked_header_bytes = 88;  // the header check covers bytes 0..87

const Field& field_at(std::size_t offset) {
  for (const Field& f : fields) {
    if (offset < f.offset + f.size) return f;
  }
  return fields[std::size(fields) - 1];
}

std::string hex_bytes(const std::uint8_t* data, std::size_t count) {
  std::string out;
  char byte[4];
  for (std::size_t i = 0; i < count; ++i) {
    std::snprintf(byte, sizeof(byte), i == 0 ? "%02x" : " %02x", data[i]);
    out += byte;
  }
  return out;
}

std::string hex64(std::uint64_t x) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(x));
  return text;
}

}  // namespace

std::string with_article(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::galois_keys:
      return "Galois keys";
    case ObjectKind::parameters:
    case ObjectKind::sparse_encapsulation_keys:
      return to_string(kind);
    default:
      return "a " + to_string(kind);
  }
}

HeaderBytes encode(const Header& h) {
  HeaderBytes b{};
  std::copy(magic.begin(), magic.end(), b.begin());
  store_le(&b[8], h.version);
  store_le(&b[10], h.kind);
  store_le(&b[12], h.flags);
  b[14] = h.word_bits;
  std::copy(h.fingerprint.begin(), h.fingerprint.end(), b.begin() + 16);
  store_le(&b[48], h.level);
  b[52] = h.domain;
  b[53] = h.basis;
  b[54] = h.components;
  store_le(&b[56], std::bit_cast<std::uint64_t>(h.scale));
  store_le(&b[64], h.digits);
  store_le(&b[68], h.entries);
  store_le(&b[72], h.payload_bytes);
  store_le(&b[80], h.stored_bytes);
  store_le(&b[88], checksum(b.data(), checked_header_bytes));
  return b;
}

Input::Input(std::istream& in) : in_(in) {
  const auto position = in_.tellg();
  if (position == std::istream::pos_type(-1)) return;
  if (in_.seekg(0, std::ios::end)) {
    const auto end = in_.tellg();
    if (end != std::istream::pos_type(-1) && in_.seekg(position)) {
      start_ = static_cast<std::uint64_t>(position);
      end_ = static_cast<std::uint64_t>(end);
      return;
    }
  }
  // Not seekable after all: keep reading from where the stream was.
  in_.clear();
  in_.seekg(position);
  in_.clear();
}

std::size_t Input::read_some(void* out, std::size_t bytes) {
  if (bytes == 0) return 0;
  in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  const auto got = static_cast<std::size_t>(in_.gcount());
  consumed_ += got;
  if (got < bytes && in_.bad()) {
    throw IoError("reading the input failed after " + std::to_string(consumed_) + " bytes (stream error)");
  }
  return got;
}

void Input::read_exact(void* out, std::size_t bytes, const std::string& what) {
  const std::size_t got = read_some(out, bytes);
  if (got != bytes) {
    throw FormatError(what + " ends after " + std::to_string(got) + " of " + std::to_string(bytes) +
                      " bytes: the input is truncated");
  }
}

std::optional<std::uint64_t> Input::remaining() const {
  if (!end_) return std::nullopt;
  const std::uint64_t at = start_ + consumed_;
  return *end_ > at ? *end_ - at : 0;
}

bool Input::peek(std::uint64_t ahead, void* out, std::size_t bytes) {
  const auto left = remaining();
  if (!left || ahead > *left || bytes > *left - ahead) return false;
  const auto here = in_.tellg();
  const bool read = in_.seekg(static_cast<std::streamoff>(ahead), std::ios::cur) &&
                    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  in_.clear();
  if (!in_.seekg(here)) throw IoError("cannot seek back after reading ahead in the input");
  return read;
}

ReadHeader read_header(Input& in, std::optional<ObjectKind> expected) {
  ReadHeader r;
  const std::string wanted = expected ? with_article(*expected) : "an FHElium object";
  const std::size_t got = in.read_some(r.bytes.data(), header_bytes);
  if (got == 0) throw FormatError("the input is empty: expected " + wanted + " (a 96-byte FHElium header first)");
  const std::size_t magic_seen = std::min(got, magic.size());
  if (!std::equal(magic.begin(), magic.begin() + static_cast<std::ptrdiff_t>(magic_seen), r.bytes.begin())) {
    throw FormatError("not an FHElium object: it starts with the bytes " + hex_bytes(r.bytes.data(), magic_seen) +
                      ", expected the magic 46 48 45 4c 49 55 4d 00 (\"FHELIUM\\0\"); expected " + wanted);
  }
  if (got >= 10) {
    const auto version = load_le<std::uint16_t>(&r.bytes[8]);
    if (version > format_version) {
      throw FormatError("format version " + std::to_string(version) +
                        " is newer than this reader, which reads version " + std::to_string(format_version) +
                        ": load it with a newer FHElium");
    }
    if (version != format_version) {
      throw FormatError("format version " + std::to_string(version) + " is unknown: this reader reads version " +
                        std::to_string(format_version));
    }
  }
  if (got < header_bytes) {
    const Field& f = field_at(got);
    throw FormatError("truncated header: the input ends after " + std::to_string(got) + " of " +
                      std::to_string(header_bytes) + " header bytes, inside the " + f.name + " field (bytes " +
                      std::to_string(f.offset) + ".." + std::to_string(f.offset + f.size - 1) + "); expected " +
                      wanted);
  }
  const auto stored_check = load_le<std::uint64_t>(&r.bytes[checked_header_bytes]);
  const auto computed_check = checksum(r.bytes.data(), checked_header_bytes);
  if (stored_check != computed_check && enforce_checks) {
    throw FormatError("header check failed: the header stores XXH3-64 " + hex64(stored_check) + " but bytes 0.." +
                      std::to_string(checked_header_bytes - 1) + " hash to " + hex64(computed_check) +
                      ": the header is corrupted");
  }
  Header& h = r.header;
  h.version = load_le<std::uint16_t>(&r.bytes[8]);
  h.kind = load_le<std::uint16_t>(&r.bytes[10]);
  h.flags = load_le<std::uint16_t>(&r.bytes[12]);
  h.word_bits = r.bytes[14];
  std::copy(r.bytes.begin() + 16, r.bytes.begin() + 48, h.fingerprint.begin());
  h.level = load_le<std::uint32_t>(&r.bytes[48]);
  h.domain = r.bytes[52];
  h.basis = r.bytes[53];
  h.components = r.bytes[54];
  h.scale = std::bit_cast<double>(load_le<std::uint64_t>(&r.bytes[56]));
  h.digits = load_le<std::uint32_t>(&r.bytes[64]);
  h.entries = load_le<std::uint32_t>(&r.bytes[68]);
  h.payload_bytes = load_le<std::uint64_t>(&r.bytes[72]);
  h.stored_bytes = load_le<std::uint64_t>(&r.bytes[80]);

  if (h.kind < static_cast<std::uint16_t>(ObjectKind::parameters) ||
      h.kind > static_cast<std::uint16_t>(ObjectKind::sparse_encapsulation_keys)) {
    throw FormatError("object kind " + std::to_string(h.kind) +
                      " is unknown: expected 1..8 (parameters, plaintext, ciphertext, public key, relinearization "
                      "key, Galois keys, secret key, sparse-secret encapsulation keys)");
  }
  if (expected && h.object_kind() != *expected) {
    throw FormatError("expected " + with_article(*expected) + ", but the input holds " + with_article(h.object_kind()) +
                      " (object kind " + std::to_string(h.kind) + ")");
  }
  if ((h.flags & ~known_flags) != 0) {
    throw FormatError("flags " + hex64(h.flags) +
                      " have unknown bits: this reader knows compressed (1) and seeded (2)");
  }
  if (r.bytes[15] != 0 || r.bytes[55] != 0) {
    throw FormatError("reserved header bytes 15 and 55 are " + std::to_string(r.bytes[15]) + " and " +
                      std::to_string(r.bytes[55]) + ", expected 0");
  }
  if (h.word_bits != 32 && h.word_bits != 64) {
    throw FormatError("word size " + std::to_string(h.word_bits) + " bits is not a word size: expected 32 or 64");
  }
  return r;
}

void check_context(const Header& h, const Context& context) {
  const int context_bits = static_cast<int>(context.word_size());
  if (h.word_bits != context_bits) {
    throw StateError(with_article(h.object_kind()) + " of " + std::to_string(h.word_bits) +
                     "-bit words cannot be loaded into a context of " + std::to_string(context_bits) +
                     "-bit words: load it with a context of its word size");
  }
  const Fingerprint ours = context_fingerprint(context);
  if (h.fingerprint != ours) {
    throw StateError(with_article(h.object_kind()) + " of the context with fingerprint " + to_hex(h.fingerprint, 8) +
                     "... cannot be loaded into the caller's context, fingerprint " + to_hex(ours, 8) +
                     "...: load it with the parameters it was saved with");
  }
}

void check_sizes(const Header& h, std::uint64_t expected_payload, std::optional<std::uint64_t> remaining,
                 const std::string& what) {
  if (h.payload_bytes != expected_payload) {
    throw FormatError(what + " declares a payload of " + std::to_string(h.payload_bytes) + " bytes, expected " +
                      std::to_string(expected_payload) + " bytes for its state in this context");
  }
  if (!h.compressed() && h.stored_bytes != h.payload_bytes) {
    throw FormatError(what + " is not compressed but declares " + std::to_string(h.stored_bytes) +
                      " stored bytes for a payload of " + std::to_string(h.payload_bytes) + " bytes");
  }
  if (h.compressed() && (h.stored_bytes == 0 || h.stored_bytes > ZSTD_compressBound(h.payload_bytes))) {
    throw FormatError(what + " declares " + std::to_string(h.stored_bytes) +
                      " compressed bytes, more than zstd's bound of " +
                      std::to_string(ZSTD_compressBound(h.payload_bytes)) + " for a payload of " +
                      std::to_string(h.payload_bytes) + " bytes");
  }
  if (const auto left = remaining; left && (*left < check_bytes || *left - check_bytes < h.stored_bytes)) {
    throw FormatError(what + " declares " + std::to_string(h.stored_bytes) + " stored bytes and an " +
                      std::to_string(check_bytes) + "-byte check, but only " + std::to_string(*left) +
                      " bytes remain in the input: the input is truncated");
  }
}

}  // namespace fhelium::serialization

namespace fhelium {

std::string to_string(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::parameters:
      return "parameters";
    case ObjectKind::plaintext:
      return "plaintext";
    case ObjectKind::ciphertext:
      return "ciphertext";
    case ObjectKind::public_key:
      return "public key";
    case ObjectKind::relinearization_key:
      return "relinearization key";
    case ObjectKind::galois_keys:
      return "Galois keys";
    case ObjectKind::secret_key:
      return "secret key";
    case ObjectKind::sparse_encapsulation_keys:
      return "sparse-secret encapsulation keys";
  }
  return "object kind " + std::to_string(static_cast<int>(kind));
}

}  // namespace fhelium
