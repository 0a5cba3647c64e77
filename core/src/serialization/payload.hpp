// Payload bytes between the header and the check: written from and read into
// the caller's memory in segments (a limb, a seed, a table), raw or as one zstd
// frame, hashed on the way, with residues checked against their primes while
// each segment is still in cache.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/serialization.hpp"
#include "serialization/checksum.hpp"
#include "serialization/framing.hpp"

namespace fhelium::serialization {

struct ConstSegment {
  const void* data;
  std::size_t bytes;
};

struct Segment {
  void* data;
  std::size_t bytes;
  u64 bound = 0;  // when non-zero, every 8-byte word must be below it
  int part = 0;   // names the segment in messages, with `limb`
  int limb = 0;
};

// The payload as it will be stored: the segments themselves, or their zstd frame.
class StoredPayload {
 public:
  StoredPayload(std::span<const ConstSegment> segments, const SaveOptions& options);

  bool compressed() const { return compressed_; }
  std::uint64_t payload_bytes() const { return payload_bytes_; }
  std::uint64_t stored_bytes() const { return compressed_ ? frame_.size() : payload_bytes_; }
  // Writes the stored bytes and hashes them into `check`.
  void write(std::ostream& out, Checksum& check) const;

 private:
  std::vector<ConstSegment> segments_;
  std::vector<std::uint8_t> frame_;
  std::uint64_t payload_bytes_ = 0;
  bool compressed_ = false;
};

struct BadResidue {
  std::size_t segment = 0;
  std::size_t index = 0;  // word within the segment
  u64 value = 0;
};

// The first word not below `bound`; one branch-free pass for the common case.
std::optional<std::size_t> first_not_below(const u64* words, std::size_t count, u64 bound);

// Reads a payload's stored bytes (raw, or one zstd frame when `compressed`) in
// consecutive pieces of the caller's choosing, hashing the stored bytes into
// `check`. finish() checks that the frame ends exactly at the declared size.
class PayloadReader {
 public:
  PayloadReader(Input& in, Checksum& check, bool compressed, std::uint64_t stored_bytes, std::uint64_t payload_bytes,
                std::string what);
  ~PayloadReader();
  PayloadReader(const PayloadReader&) = delete;
  PayloadReader& operator=(const PayloadReader&) = delete;

  // The next `bytes` of the payload, or FormatError (truncated, corrupted
  // frame). `hash` false: the payload is raw (!compressed()) and the caller
  // hashes these bytes into the check itself, in order.
  void read(void* out, std::size_t bytes, bool hash = true);
  bool compressed() const { return compressed_; }
  void finish();

 private:
  struct DctxFree {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
  };
  void decompress(ZSTD_outBuffer& output);

  Input& in_;
  Checksum& check_;
  bool compressed_;
  std::uint64_t payload_bytes_;
  std::uint64_t stored_bytes_;
  std::uint64_t unread_;  // stored bytes not read yet
  std::uint64_t produced_ = 0;
  std::string what_;
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx_;
  std::vector<std::uint8_t> chunk_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool frame_done_ = false;
};

// Reads `stored_bytes` (a zstd frame when `compressed`) into the segments,
// whose sizes add up to the declared payload, hashing the stored bytes into
// `check`. Returns the first residue not below its bound, for the caller to
// report after the check has passed (a corrupted file is reported as such).
std::optional<BadResidue> read_stored(Input& in, Checksum& check, bool compressed, std::uint64_t stored_bytes,
                                      std::span<const Segment> segments, const std::string& what);

// Reads the 8-byte check and compares it with `check`.
void read_check(Input& in, const Checksum& check, const std::string& what);

// A whole object: header (sizes filled in here), payload and check.
void write_object(std::ostream& out, Header header, std::span<const ConstSegment> payload, const SaveOptions& options);

// Reads the payload and check of an object whose header was read and checked,
// then reports a residue not below its prime. `describe(part, limb)` names a
// segment: "component 1, limb 3".
using DescribeSegment = std::function<std::string(int part, int limb)>;
void read_object_payload(Input& in, const ReadHeader& header, std::span<const Segment> segments,
                         const DescribeSegment& describe);

[[noreturn]] void throw_bad_residue(const BadResidue& bad, std::span<const Segment> segments,
                                    const DescribeSegment& describe, const std::string& what);
// "residue V at WHERE of WHAT is not below its prime P: ..."
[[noreturn]] void throw_bad_residue(u64 value, u64 prime, const std::string& where, const std::string& what);

// Sizes a fresh `words` to `count` zeroed words, the destination of a load.
// Large buffers are first advised onto transparent huge pages: on virtual
// machines faulting in and copying into 4 KiB pages costs several times the
// load itself (docs/serialization.md, "Speed").
void resize_for_load(std::vector<u64>& words, std::size_t count);

// IoError unless the stream is still good after writing `what`.
void check_written(const std::ostream& out, const std::string& what);

}  // namespace fhelium::serialization
