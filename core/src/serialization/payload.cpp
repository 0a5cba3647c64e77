#include "serialization/payload.hpp"

#include <sys/mman.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <istream>
#include <memory>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/little_endian.hpp"

namespace fhelium::serialization {
namespace {

constexpr std::size_t input_chunk = std::size_t{1} << 20;  // compressed input is read 1 MiB at a time

struct CctxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

std::string zstd_error(std::size_t code) { return ZSTD_getErrorName(code); }

}  // namespace

std::optional<std::size_t> first_not_below(const u64* words, std::size_t count, u64 bound) {
  u64 any = 0;
  for (std::size_t k = 0; k < count; ++k) any |= static_cast<u64>(words[k] >= bound);
  if (any == 0) return std::nullopt;
  return static_cast<std::size_t>(std::find_if(words, words + count, [&](u64 w) { return w >= bound; }) - words);
}

namespace {

void scan(const Segment& s, std::size_t index, std::optional<BadResidue>& bad) {
  if (s.bound == 0 || bad) return;
  if (const auto k = first_not_below(static_cast<const u64*>(s.data), s.bytes / sizeof(u64), s.bound)) {
    bad = BadResidue{index, *k, static_cast<const u64*>(s.data)[*k]};
  }
}

std::uint64_t total_bytes(std::span<const Segment> segments) {
  std::uint64_t total = 0;
  for (const Segment& s : segments) total += s.bytes;
  return total;
}

std::string hex64(std::uint64_t x) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(x));
  return text;
}

}  // namespace

StoredPayload::StoredPayload(std::span<const ConstSegment> segments, const SaveOptions& options)
    : segments_(segments.begin(), segments.end()), compressed_(options.compress) {
  for (const ConstSegment& s : segments_) payload_bytes_ += s.bytes;
  if (!compressed_) return;
  if (options.compression_level < ZSTD_minCLevel() || options.compression_level > ZSTD_maxCLevel()) {
    throw InvalidArgumentError("compression level " + std::to_string(options.compression_level) +
                               " is out of range: expected " + std::to_string(ZSTD_minCLevel()) + ".." +
                               std::to_string(ZSTD_maxCLevel()));
  }
  const std::unique_ptr<ZSTD_CCtx, CctxFree> cctx(ZSTD_createCCtx());
  if (!cctx) throw Error("could not create a zstd compression context");
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, options.compression_level);
  ZSTD_CCtx_setPledgedSrcSize(cctx.get(), payload_bytes_);
  frame_.resize(ZSTD_compressBound(payload_bytes_));
  ZSTD_outBuffer out{frame_.data(), frame_.size(), 0};
  for (std::size_t i = 0; i <= segments_.size(); ++i) {
    // One more call with no input ends the frame.
    const bool last = i == segments_.size();
    ZSTD_inBuffer in{last ? nullptr : segments_[i].data, last ? 0 : segments_[i].bytes, 0};
    for (;;) {
      const std::size_t left = ZSTD_compressStream2(cctx.get(), &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(left)) throw Error("zstd compression failed: " + zstd_error(left));
      if (last ? left == 0 : in.pos == in.size) break;
      if (out.pos == out.size) {  // not expected within compressBound; grow to be safe
        frame_.resize(frame_.size() * 2);
        out = {frame_.data(), frame_.size(), out.pos};
      }
    }
  }
  frame_.resize(out.pos);
}

void StoredPayload::write(std::ostream& out, Checksum& check) const {
  if (compressed_) {
    check.update(frame_.data(), frame_.size());
    out.write(reinterpret_cast<const char*>(frame_.data()), static_cast<std::streamsize>(frame_.size()));
    return;
  }
  for (const ConstSegment& s : segments_) {
    check.update(s.data, s.bytes);
    out.write(static_cast<const char*>(s.data), static_cast<std::streamsize>(s.bytes));
  }
}

PayloadReader::PayloadReader(Input& in, Checksum& check, bool compressed, std::uint64_t stored_bytes,
                             std::uint64_t payload_bytes, std::string what)
    : in_(in),
      check_(check),
      compressed_(compressed),
      payload_bytes_(payload_bytes),
      stored_bytes_(stored_bytes),
      unread_(stored_bytes),
      what_(std::move(what)) {
  if (!compressed_) return;
  dctx_.reset(ZSTD_createDCtx());
  if (!dctx_) throw Error("could not create a zstd decompression context");
  // A window larger than the payload is never needed (frames are written with
  // their size pledged), so a frame cannot make zstd allocate more than that.
  const ZSTD_bounds bounds = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
  const int window_log =
      std::clamp(static_cast<int>(std::bit_width(payload_bytes)), bounds.lowerBound, bounds.upperBound);
  ZSTD_DCtx_setParameter(dctx_.get(), ZSTD_d_windowLogMax, window_log);
  chunk_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(stored_bytes, input_chunk)));
}

PayloadReader::~PayloadReader() = default;

void PayloadReader::read(void* out, std::size_t bytes, bool hash) {
  if (!compressed_) {
    const std::size_t got = in_.read_some(out, bytes);
    produced_ += got;
    if (got != bytes) {
      throw FormatError(what_ + "'s payload ends after " + std::to_string(produced_) + " of " +
                        std::to_string(payload_bytes_) + " bytes: the input is truncated");
    }
    if (hash) check_.update(out, bytes);
    return;
  }
  ZSTD_outBuffer output{out, bytes, 0};
  while (output.pos < output.size) {
    if (frame_done_) {
      throw FormatError(what_ + "'s compressed payload decompresses to " + std::to_string(produced_) +
                        " bytes, expected the declared " + std::to_string(payload_bytes_));
    }
    decompress(output);
  }
}

void PayloadReader::finish() {
  if (!compressed_) return;
  std::uint8_t overflow = 0;  // a place for output past the declared size, to detect it
  while (!frame_done_) {
    ZSTD_outBuffer output{&overflow, 1, 0};
    decompress(output);
    if (output.pos > 0) {
      throw FormatError(what_ + "'s compressed payload decompresses to more than the declared " +
                        std::to_string(payload_bytes_) + " bytes");
    }
  }
  if (input_.pos != input_.size || unread_ != 0) {
    throw FormatError(what_ + "'s compressed payload has " + std::to_string(input_.size - input_.pos + unread_) +
                      " bytes after the end of its zstd frame");
  }
}

void PayloadReader::decompress(ZSTD_outBuffer& output) {
  if (input_.pos == input_.size && unread_ > 0) {
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(unread_, chunk_.size()));
    const std::size_t got = in_.read_some(chunk_.data(), take);
    if (got != take) {
      throw FormatError(what_ + "'s compressed payload ends after " + std::to_string(stored_bytes_ - unread_ + got) +
                        " of " + std::to_string(stored_bytes_) + " bytes: the input is truncated");
    }
    check_.update(chunk_.data(), got);
    input_ = {chunk_.data(), got, 0};
    unread_ -= got;
  }
  const std::size_t in_before = input_.pos;
  const std::size_t out_before = output.pos;
  const std::size_t left = ZSTD_decompressStream(dctx_.get(), &output, &input_);
  if (ZSTD_isError(left)) {
    throw FormatError(what_ + "'s compressed payload is not a valid zstd frame: " + zstd_error(left));
  }
  produced_ += output.pos - out_before;
  if (left == 0) {
    frame_done_ = true;
  } else if (input_.pos == in_before && output.pos == out_before && input_.pos == input_.size && unread_ == 0) {
    throw FormatError(what_ + "'s compressed payload ends inside its zstd frame, after " + std::to_string(produced_) +
                      " decompressed bytes");
  }
}

std::optional<BadResidue> read_stored(Input& in, Checksum& check, bool compressed, std::uint64_t stored_bytes,
                                      std::span<const Segment> segments, const std::string& what) {
  PayloadReader reader(in, check, compressed, stored_bytes, total_bytes(segments), what);
  std::optional<BadResidue> bad;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    reader.read(segments[i].data, segments[i].bytes);
    scan(segments[i], i, bad);
  }
  reader.finish();
  return bad;
}

void read_check(Input& in, const Checksum& check, const std::string& what) {
  std::uint8_t bytes[check_bytes];
  const std::size_t got = in.read_some(bytes, check_bytes);
  if (got != check_bytes) {
    throw FormatError(what + "'s integrity check ends after " + std::to_string(got) + " of " +
                      std::to_string(check_bytes) + " bytes: the input is truncated");
  }
  const auto stored = load_le<std::uint64_t>(bytes);
  const auto computed = check.digest();
  if (stored != computed && enforce_checks) {
    throw FormatError("integrity check failed: " + what + " stores XXH3-64 " + hex64(stored) +
                      " but its header and payload hash to " + hex64(computed) + ": the data is corrupted");
  }
}

void write_object(std::ostream& out, Header header, std::span<const ConstSegment> payload, const SaveOptions& options) {
  const StoredPayload stored(payload, options);
  header.flags =
      static_cast<std::uint16_t>((header.flags & ~flag_compressed) | (stored.compressed() ? flag_compressed : 0));
  header.payload_bytes = stored.payload_bytes();
  header.stored_bytes = stored.stored_bytes();
  const HeaderBytes bytes = encode(header);
  Checksum check;
  check.update(bytes.data(), bytes.size());
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  stored.write(out, check);
  std::uint8_t digest[check_bytes];
  store_le(digest, check.digest());
  out.write(reinterpret_cast<const char*>(digest), sizeof(digest));
  check_written(out, with_article(header.object_kind()));
}

void read_object_payload(Input& in, const ReadHeader& header, std::span<const Segment> segments,
                         const DescribeSegment& describe) {
  const std::string what = "the " + to_string(header.header.object_kind());
  Checksum check;
  check.update(header.bytes.data(), header.bytes.size());
  const auto bad = read_stored(in, check, header.header.compressed(), header.header.stored_bytes, segments, what);
  read_check(in, check, what);
  if (bad) throw_bad_residue(*bad, segments, describe, what);
}

void throw_bad_residue(const BadResidue& bad, std::span<const Segment> segments, const DescribeSegment& describe,
                       const std::string& what) {
  const Segment& s = segments[bad.segment];
  throw_bad_residue(bad.value, s.bound, describe(s.part, s.limb) + ", coefficient " + std::to_string(bad.index), what);
}

void throw_bad_residue(u64 value, u64 prime, const std::string& where, const std::string& what) {
  throw FormatError("residue " + std::to_string(value) + " at " + where + " of " + what + " is not below its prime " +
                    std::to_string(prime) +
                    ": the object is invalid (its integrity check matches, so it was written so)");
}

void resize_for_load(std::vector<u64>& words, std::size_t count) {
  constexpr std::uintptr_t huge_page = std::uintptr_t{1} << 21;
  words.reserve(count);
  const auto begin = reinterpret_cast<std::uintptr_t>(words.data());
  const std::uintptr_t first = (begin + huge_page - 1) & ~(huge_page - 1);
  const std::uintptr_t last = (begin + count * sizeof(u64)) & ~(huge_page - 1);
  if (last >= first + 2 * huge_page) {
    // A hint: where it is refused, the load is only slower.
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
  words.resize(count);
}

void check_written(const std::ostream& out, const std::string& what) {
  if (!out.good()) throw IoError("writing " + what + " failed: the output stream reports an error");
}

}  // namespace fhelium::serialization
