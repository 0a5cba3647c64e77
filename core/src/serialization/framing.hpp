// The frame every object shares: a fixed 96-byte header, the payload, and an
// XXH3-64 check over both (docs/serialization.md, "Header").
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "fhelium/serialization.hpp"

namespace fhelium::serialization {

inline constexpr std::array<std::uint8_t, 8> magic = {'F', 'H', 'E', 'L', 'I', 'U', 'M', 0};
inline constexpr std::uint16_t format_version = 1;
inline constexpr std::size_t header_bytes = 96;
inline constexpr std::size_t check_bytes = 8;

inline constexpr std::uint16_t flag_compressed = 1;
inline constexpr std::uint16_t flag_seeded = 2;
inline constexpr std::uint16_t known_flags = flag_compressed | flag_seeded;

struct Header {
  std::uint16_t version = format_version;
  std::uint16_t kind = 0;
  std::uint16_t flags = 0;
  std::uint8_t word_bits = 64;
  Fingerprint fingerprint{};
  std::uint32_t level = 0;
  std::uint8_t domain = 0;
  std::uint8_t basis = 0;
  std::uint8_t components = 0;
  double scale = 0;
  std::uint32_t digits = 0;
  std::uint32_t entries = 0;
  std::uint64_t payload_bytes = 0;  // uncompressed
  std::uint64_t stored_bytes = 0;   // as stored (the zstd frame when compressed)

  bool compressed() const { return (flags & flag_compressed) != 0; }
  bool seeded() const { return (flags & flag_seeded) != 0; }
  ObjectKind object_kind() const { return static_cast<ObjectKind>(kind); }
};

using HeaderBytes = std::array<std::uint8_t, header_bytes>;

// The header's bytes, its header check included.
HeaderBytes encode(const Header& header);

// An input stream, read in caller-sized blocks, that knows how much input
// remains when it is seekable.
class Input {
 public:
  explicit Input(std::istream& in);

  // Reads up to `bytes`; fewer only at the end of the input. IoError when the
  // stream fails other than by ending.
  std::size_t read_some(void* out, std::size_t bytes);
  // Reads exactly `bytes`, or throws FormatError: "<what> ends after k of n bytes".
  void read_exact(void* out, std::size_t bytes, const std::string& what);
  // Bytes left, when the stream is seekable.
  std::optional<std::uint64_t> remaining() const;
  // Reads `bytes` at `ahead` bytes past the current position and comes back,
  // when the stream is seekable; false otherwise (nothing is consumed).
  bool peek(std::uint64_t ahead, void* out, std::size_t bytes);
  // Bytes read through this Input.
  std::uint64_t consumed() const { return consumed_; }
  std::istream& stream() { return in_; }

 private:
  std::istream& in_;
  std::optional<std::uint64_t> end_;  // the stream's end position, when seekable
  std::uint64_t start_ = 0;
  std::uint64_t consumed_ = 0;
};

struct ReadHeader {
  Header header;
  HeaderBytes bytes{};
};

// Reads and checks the header: magic, version, header check, a known kind
// (equal to `expected` when given), known flags, zero reserved bytes.
ReadHeader read_header(Input& in, std::optional<ObjectKind> expected);

// The word size and fingerprint equal the context's (StateError naming both).
void check_context(const Header& header, const Context& context);

// The declared sizes: the payload is `expected_payload` bytes, the stored size
// fits it, and the stored bytes and the check fit in `remaining` input bytes
// when that is known.
void check_sizes(const Header& header, std::uint64_t expected_payload, std::optional<std::uint64_t> remaining,
                 const std::string& what);

// "a relinearization key", "Galois keys", ...
std::string with_article(ObjectKind kind);

}  // namespace fhelium::serialization
