// An object's payload read straight into the host memory a backend lends
// (Backend::upload_filled: pinned staging, or the value itself), each chunk
// hashed and its residues checked while it is in cache, before the backend
// copies it in.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fhelium/work_queue.hpp"
#include "serialization/checksum.hpp"
#include "serialization/payload.hpp"

namespace fhelium::serialization {

// A raw payload is read in 1 MiB pieces; one worker thread hashes each piece
// and another scans it while the next one is read (each pass alone runs about
// as fast as the read, so the floor is the read itself); a chunk is handed
// back once all of it is checked. A chunk of one piece is read, hashed and
// scanned on the calling thread (no threads for small objects). A compressed payload is
// hashed as it is read and scanned after.
//
// The payload is blocks ("parts") of moduli.size() limbs of N words each;
// limb k of every part must be below moduli[k]. `describe(part, limb)` names
// a limb in messages.
class StreamedPayload {
 public:
  StreamedPayload(Input& in, const ReadHeader& header, std::size_t ring_degree, std::vector<u64> moduli,
                  DescribeSegment describe);

  // The Backend::ChunkFill: bytes [offset, offset + chunk.size()), in order.
  void fill(std::span<std::byte> chunk, std::size_t offset);
  // After the last chunk: the frame's end and the integrity check, then the
  // first residue not below its prime (a corrupted file is reported as such).
  void finish();

 private:
  struct Bad {
    u64 value;
    u64 prime;
    std::string where;
  };
  void scan(const u64* words, std::size_t first_word, std::size_t count);
  void read_checked(std::span<std::byte> chunk, std::size_t offset);
  void drain_workers();

  Input& in_;
  std::string what_;
  Checksum check_;
  PayloadReader reader_;
  std::size_t ring_degree_;
  std::vector<u64> moduli_;
  DescribeSegment describe_;
  std::size_t next_offset_ = 0;
  std::optional<Bad> bad_;
  // Started with the first chunk of more than one piece.
  std::optional<WorkQueue> hasher_;   // hashes raw pieces behind the reads, in order
  std::optional<WorkQueue> scanner_;  // checks their residues
};

}  // namespace fhelium::serialization
