#include "serialization/streamed_payload.hpp"

#include <algorithm>

#include "fhelium/error.hpp"

namespace fhelium::serialization {
namespace {

const u64* words(std::span<std::byte> bytes) { return reinterpret_cast<const u64*>(bytes.data()); }

}  // namespace

StreamedPayload::StreamedPayload(Input& in, const ReadHeader& header, std::size_t ring_degree, std::vector<u64> moduli,
                                 DescribeSegment describe)
    : in_(in),
      what_("the " + to_string(header.header.object_kind())),
      reader_(in, check_, header.header.compressed(), header.header.stored_bytes, header.header.payload_bytes, what_),
      ring_degree_(ring_degree),
      moduli_(std::move(moduli)),
      describe_(std::move(describe)) {
  check_.update(header.bytes.data(), header.bytes.size());  // before the reader's first byte
}

void StreamedPayload::fill(std::span<std::byte> chunk, std::size_t offset) {
  if (offset != next_offset_ || chunk.size() % sizeof(u64) != 0) {
    throw InvalidArgumentError("a backend asked for payload bytes at offset " + std::to_string(offset) + " (" +
                               std::to_string(chunk.size()) + " bytes): expected offset " +
                               std::to_string(next_offset_) + " and whole 8-byte words");
  }
  try {
    read_checked(chunk, offset);
  } catch (...) {
    drain_workers();  // nothing may touch the chunk once it is handed back
    throw;
  }
  next_offset_ += chunk.size();
}

void StreamedPayload::read_checked(std::span<std::byte> chunk, std::size_t offset) {
  constexpr std::size_t piece_bytes = std::size_t{1} << 20;
  if (reader_.compressed() || chunk.size() <= piece_bytes) {
    reader_.read(chunk.data(), chunk.size());
    scan(words(chunk), offset / sizeof(u64), chunk.size() / sizeof(u64));
    return;
  }
  if (!hasher_) {
    hasher_.emplace();
    scanner_.emplace();
  }
  for (std::size_t at = 0; at < chunk.size(); at += piece_bytes) {
    const std::span<std::byte> piece = chunk.subspan(at, std::min(piece_bytes, chunk.size() - at));
    reader_.read(piece.data(), piece.size(), false);
    hasher_->submit([this, piece] { check_.update(piece.data(), piece.size()); });
    scanner_->submit([this, piece, first_word = (offset + at) / sizeof(u64)] {
      scan(words(piece), first_word, piece.size() / sizeof(u64));
    });
  }
  drain_workers();
}

void StreamedPayload::drain_workers() {
  if (hasher_) hasher_->drain();
  if (scanner_) scanner_->drain();
}

void StreamedPayload::scan(const u64* words, std::size_t first_word, std::size_t count) {
  if (bad_) return;
  // One run per limb within the chunk, each against its prime.
  for (std::size_t w = first_word, end = first_word + count; w < end;) {
    const std::size_t limb_index = w / ring_degree_;
    const std::size_t run_end = std::min(end, (limb_index + 1) * ring_degree_);
    const std::size_t k = limb_index % moduli_.size();
    if (const auto at = first_not_below(words + (w - first_word), run_end - w, moduli_[k])) {
      const std::size_t word = w + *at;
      bad_ = Bad{words[word - first_word], moduli_[k],
                 describe_(static_cast<int>(limb_index / moduli_.size()), static_cast<int>(k)) + ", coefficient " +
                     std::to_string(word % ring_degree_)};
      return;
    }
    w = run_end;
  }
}

void StreamedPayload::finish() {
  reader_.finish();
  read_check(in_, check_, what_);
  if (bad_) throw_bad_residue(bad_->value, bad_->prime, bad_->where, what_);
}

}  // namespace fhelium::serialization
