#include "fhelium/backend/residue_transfer.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace fhelium {

void upload_residues(Backend& backend, Buffer& dst, std::span<const u64> residues, WordSize word_size) {
  if (stored_word_bytes(word_size) == sizeof(u64)) {
    backend.upload(dst, residues.data(), residues.size_bytes());
    return;
  }
  const std::vector<u32> narrow(residues.begin(), residues.end());
  backend.upload(dst, narrow.data(), narrow.size() * sizeof(u32));
}

void download_residues(Backend& backend, const Buffer& src, std::span<u64> residues, WordSize word_size) {
  if (stored_word_bytes(word_size) == sizeof(u64)) {
    backend.download(src, residues.data(), residues.size_bytes());
    return;
  }
  std::vector<u32> narrow(residues.size());
  backend.download(src, narrow.data(), narrow.size() * sizeof(u32));
  std::copy(narrow.begin(), narrow.end(), residues.begin());
}

void upload_residues_filled(Backend& backend, Buffer& dst, std::size_t count, WordSize word_size,
                            const Backend::ChunkFill& fill) {
  if (stored_word_bytes(word_size) == sizeof(u64)) {
    backend.upload_filled(dst, count * sizeof(u64), fill);
    return;
  }
  // Each 32-bit chunk the backend lends is filled as 64-bit words, in pieces
  // of at most upload_chunk_bytes, then narrowed.
  std::vector<u64> wide;
  backend.upload_filled(dst, count * sizeof(u32), [&](std::span<std::byte> chunk, std::size_t offset) {
    const std::size_t first = offset / sizeof(u32);
    const std::size_t words = chunk.size() / sizeof(u32);
    constexpr std::size_t piece = Backend::upload_chunk_bytes / sizeof(u64);
    for (std::size_t done = 0; done < words; done += piece) {
      const std::size_t len = std::min(piece, words - done);
      wide.resize(len);
      fill(std::as_writable_bytes(std::span(wide)), (first + done) * sizeof(u64));
      for (std::size_t k = 0; k < len; ++k) {
        const auto r = static_cast<u32>(wide[k]);
        std::memcpy(chunk.data() + (done + k) * sizeof(u32), &r, sizeof(u32));
      }
    }
  });
}

}  // namespace fhelium
