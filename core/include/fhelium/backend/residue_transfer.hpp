// Residues between the host and a backend. The host holds every residue in a
// 64-bit word (HostValue, HostSwitchKey, files); a backend stores each in
// stored_word_bytes(word size) bytes, so the 32-bit family moves half the
// bytes and is narrowed and widened here.
#pragma once

#include <cstddef>
#include <span>

#include "fhelium/backend/backend.hpp"

namespace fhelium {

void upload_residues(Backend& backend, Buffer& dst, std::span<const u64> residues, WordSize word_size);
void download_residues(Backend& backend, const Buffer& src, std::span<u64> residues, WordSize word_size);
// upload_filled for `count` residues: fill writes them as 64-bit words, in
// consecutive chunks of at most Backend::upload_chunk_bytes.
void upload_residues_filled(Backend& backend, Buffer& dst, std::size_t count, WordSize word_size,
                            const Backend::ChunkFill& fill);

}  // namespace fhelium
