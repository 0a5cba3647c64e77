// A set of Galois keys: an index of 32-byte rows (element, flags, offset,
// sizes) framed like any object, then the entries back to back, each with its
// own check over its index row and stored bytes, so one key loads alone.
#include <algorithm>
#include <istream>
#include <limits>
#include <ostream>

#include "fhelium/error.hpp"
#include "serialization/framing.hpp"
#include "serialization/little_endian.hpp"
#include "serialization/state.hpp"
#include "serialization/switch_key_payload.hpp"

namespace fhelium {

using namespace serialization;

namespace {

constexpr std::size_t row_bytes = 32;

std::string element_list(const std::vector<std::uint32_t>& elements) {
  if (elements.empty()) return "none";
  std::string out;
  const std::size_t shown = std::min<std::size_t>(elements.size(), 32);
  for (std::size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : ", ") + std::to_string(elements[i]);
  if (shown < elements.size()) out += " and " + std::to_string(elements.size() - shown) + " more";
  return out;
}

void check_element(const Context& ctx, std::uint32_t element, const std::string& what) {
  if (element % 2 == 0 || element >= 2 * ctx.ring_degree()) {
    throw FormatError(what + ": Galois element " + std::to_string(element) +
                      " is not an odd number below 2N = " + std::to_string(2 * ctx.ring_degree()));
  }
}

}  // namespace

void save_galois_keys(std::ostream& out, const Context& ctx, std::span<const HostSwitchKey> keys, SaveOptions options) {
  std::vector<const HostSwitchKey*> sorted;
  for (const HostSwitchKey& key : keys) {
    const std::string what = "the Galois key for element " + std::to_string(key.galois_element);
    if (key.galois_element % 2 == 0 || key.galois_element >= 2 * ctx.ring_degree()) {
      throw InvalidArgumentError(
          "save_galois_keys: " + what +
          " is not a Galois key: expected an odd element below 2N = " + std::to_string(2 * ctx.ring_degree()));
    }
    check_saving_switch_key(ctx, key, what);
    sorted.push_back(&key);
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->galois_element < b->galois_element; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->galois_element == sorted[i - 1]->galois_element) {
      throw InvalidArgumentError("save_galois_keys: two keys for Galois element " +
                                 std::to_string(sorted[i]->galois_element) + ", expected one per element");
    }
  }
  // Compressed entries are compressed here, before the index that holds their sizes.
  std::vector<StoredPayload> stored;
  stored.reserve(sorted.size());
  for (const HostSwitchKey* key : sorted) stored.emplace_back(switch_key_segments(ctx, *key), options);
  std::vector<std::uint8_t> index(sorted.size() * row_bytes);
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    std::uint8_t* row = index.data() + i * row_bytes;
    const auto flags = static_cast<std::uint16_t>((stored[i].compressed() ? flag_compressed : 0) |
                                                  (sorted[i]->a_seed ? flag_seeded : 0));
    store_le(row, sorted[i]->galois_element);
    store_le(row + 4, flags);
    store_le(row + 6, std::uint16_t{0});
    store_le(row + 8, offset);
    store_le(row + 16, stored[i].stored_bytes());
    store_le(row + 24, stored[i].payload_bytes());
    offset += stored[i].stored_bytes() + check_bytes;
  }
  Header h = base_header(ctx, ObjectKind::galois_keys);
  set_state(h, key_state(ctx));
  h.digits = static_cast<std::uint32_t>(ctx.key_digits());
  h.entries = static_cast<std::uint32_t>(sorted.size());
  std::vector<ConstSegment> index_segment;
  if (!index.empty()) index_segment.push_back({index.data(), index.size()});
  write_object(out, h, index_segment, SaveOptions{});  // the index is never compressed
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    Checksum check;
    check.update(index.data() + i * row_bytes, row_bytes);
    stored[i].write(out, check);
    std::uint8_t digest[check_bytes];
    store_le(digest, check.digest());
    out.write(reinterpret_cast<const char*>(digest), sizeof(digest));
  }
  check_written(out, "Galois keys");
}

GaloisKeyFile::GaloisKeyFile(std::istream& stream, const Context& ctx) : in_(stream), context_(ctx) {
  const std::string what = "the Galois key index";
  Input in(stream);
  const ReadHeader r = read_header(in, ObjectKind::galois_keys);
  const Header& h = r.header;
  check_context(h, ctx);
  check_key_state(h, ctx, static_cast<std::uint32_t>(ctx.key_digits()), what);
  check_not_seeded(h, what);
  if (h.entries > ctx.ring_degree()) {
    throw FormatError(what + " declares " + std::to_string(h.entries) + " keys, more than the " +
                      std::to_string(ctx.ring_degree()) + " Galois elements of the context");
  }
  check_sizes(h, std::uint64_t{h.entries} * row_bytes, in.remaining(), what);
  std::vector<std::uint8_t> index(std::size_t{h.entries} * row_bytes);
  std::vector<Segment> segments;
  if (!index.empty()) segments.push_back({index.data(), index.size()});
  read_object_payload(in, r, segments, [](int, int) { return std::string("the index"); });

  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < h.entries; ++i) {
    const std::uint8_t* row = index.data() + i * row_bytes;
    const std::string where = what + ", row " + std::to_string(i);
    Entry e;
    std::copy(row, row + row_bytes, e.row.begin());
    e.element = load_le<std::uint32_t>(row);
    e.flags = load_le<std::uint16_t>(row + 4);
    e.offset = load_le<std::uint64_t>(row + 8);
    e.stored_bytes = load_le<std::uint64_t>(row + 16);
    e.payload_bytes = load_le<std::uint64_t>(row + 24);
    check_element(ctx, e.element, where);
    if (i > 0 && e.element <= entries_.back().element) {
      throw FormatError(where + ": Galois element " + std::to_string(e.element) + " follows " +
                        std::to_string(entries_.back().element) + ", expected strictly ascending elements");
    }
    if ((e.flags & ~known_flags) != 0 || load_le<std::uint16_t>(row + 6) != 0) {
      throw FormatError(where + ": flags " + std::to_string(e.flags) + " or reserved bytes " +
                        std::to_string(load_le<std::uint16_t>(row + 6)) +
                        " are not known: expected flags compressed (1) and seeded (2), reserved 0");
    }
    if (e.offset != offset) {
      throw FormatError(where + ": offset " + std::to_string(e.offset) + ", expected " + std::to_string(offset) +
                        " (entries are stored back to back)");
    }
    Header entry = h;  // the entry's sizes, checked as an object's would be
    entry.flags = e.flags;
    entry.payload_bytes = e.payload_bytes;
    entry.stored_bytes = e.stored_bytes;
    const std::string entry_what = "the Galois key for element " + std::to_string(e.element);
    check_sizes(entry, switch_key_payload_bytes(ctx, (e.flags & flag_seeded) != 0), std::nullopt, entry_what);
    offset += e.stored_bytes + check_bytes;
    entries_.push_back(e);
  }
  if (const auto left = in.remaining(); left && *left < offset) {
    throw FormatError(what + " declares " + std::to_string(offset) + " bytes of keys after it, but only " +
                      std::to_string(*left) + " bytes remain in the input: the input is truncated");
  }
  if (in.remaining()) entries_start_ = static_cast<std::int64_t>(stream.tellg());
}

std::vector<std::uint32_t> GaloisKeyFile::elements() const {
  std::vector<std::uint32_t> out;
  for (const Entry& e : entries_) out.push_back(e.element);
  return out;
}

bool GaloisKeyFile::contains(std::uint32_t galois_element) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.element == galois_element; });
}

HostSwitchKey GaloisKeyFile::load(std::uint32_t galois_element) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.element == galois_element; });
  if (it == entries_.end()) {
    throw MissingKeyError("the Galois key file holds no key for Galois element " + std::to_string(galois_element) +
                          "; it holds elements " + element_list(elements()));
  }
  return read_entry(*it);
}

std::vector<HostSwitchKey> GaloisKeyFile::load_all() {
  std::vector<HostSwitchKey> keys;
  keys.reserve(entries_.size());
  for (const Entry& e : entries_) keys.push_back(read_entry(e));
  return keys;
}

HostSwitchKey GaloisKeyFile::read_entry(const Entry& e) {
  const Context& ctx = context_;
  const std::string what = "the Galois key for element " + std::to_string(e.element);
  if (entries_start_ >= 0) {
    in_.clear();
    if (!in_.seekg(entries_start_ + static_cast<std::int64_t>(e.offset))) {
      throw IoError("cannot seek to " + what + " at entry offset " + std::to_string(e.offset));
    }
  } else {
    if (e.offset < next_offset_) {
      throw InvalidArgumentError("cannot reach " + what +
                                 ": the stream is not seekable and is already past it (load keys in ascending "
                                 "element order, or from a seekable stream)");
    }
    std::vector<char> skipped(std::size_t{1} << 16);
    for (std::uint64_t left = e.offset - next_offset_; left > 0;) {
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, skipped.size()));
      in_.read(skipped.data(), static_cast<std::streamsize>(take));
      if (static_cast<std::size_t>(in_.gcount()) != take) {
        throw FormatError("the Galois key file ends before " + what + ": the input is truncated");
      }
      left -= take;
    }
  }
  next_offset_ = std::numeric_limits<std::uint64_t>::max();  // unknown until this entry is read whole
  Input in(in_);
  const bool seeded = (e.flags & flag_seeded) != 0;
  HostSwitchKey key = empty_switch_key(ctx, e.element);
  Seed seed{};
  SeededExpansion expansion(in, ctx, key, e.flags);
  const auto segments = switch_key_segments(ctx, key, seeded, seed);
  Checksum check;
  check.update(e.row.data(), e.row.size());
  const auto bad = read_stored(in, check, (e.flags & flag_compressed) != 0, e.stored_bytes, segments, what);
  read_check(in, check, what);
  next_offset_ = e.offset + e.stored_bytes + check_bytes;
  if (bad) throw_bad_residue(*bad, segments, describe_switch_key_part, what);
  expansion.finish(seed);
  return key;
}

}  // namespace fhelium
