// The CPU backend's buffer and per-context data.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "fhelium/backend/backend.hpp"

namespace fhelium::cpu {

// Recycles freed buffers by size, so steady-state operations neither call the
// allocator nor fault in fresh pages. Under AddressSanitizer nothing is kept,
// so use-after-free stays detectable.
class BufferPool {
 public:
  std::unique_ptr<u64[]> take(std::size_t words);
  void give(std::size_t words, std::unique_ptr<u64[]> data);
  // Bytes handed out and not yet given back: now, and the most ever.
  MemoryUsage usage() const;

 private:
  static constexpr std::size_t max_cached_bytes = std::size_t{1} << 30;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<std::unique_ptr<u64[]>>> free_;
  std::size_t cached_bytes_ = 0;
  std::size_t in_use_bytes_ = 0;
  std::size_t peak_bytes_ = 0;
};

class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(std::shared_ptr<BufferPool> pool, std::size_t bytes)
      : pool_(std::move(pool)), words_((bytes + 7) / 8), data_(pool_->take(words_)), bytes_(bytes) {}
  ~CpuBuffer() override { pool_->give(words_, std::move(data_)); }
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  std::size_t size_bytes() const override { return bytes_; }
  u64* data() { return data_.get(); }
  const u64* data() const { return data_.get(); }

 private:
  std::shared_ptr<BufferPool> pool_;
  std::size_t words_;
  std::unique_ptr<u64[]> data_;
  std::size_t bytes_;
};

// Scratch space for key switching, sized for the top level on first use and
// reused after (no allocation on later calls).
struct KeySwitchWorkspace {
  std::vector<u64> coefficients;  // (L + 1) x N
  std::vector<u64> extended;      // digits x (L + 1 + K) x N
  std::vector<u64> accumulators;  // 2 x (L + 1 + K) x N
  std::vector<u64> rotated;       // 2 x (L + 1) x N
  std::vector<u64> converted;     // 2 x (L + 1) x N: ModDown's P -> Q results
  std::vector<u64> slot_scratch;  // threads x 5N: one limb and two 128-bit accumulators per thread
};

class CpuContext final : public BackendContext {
 public:
  CpuContext(std::shared_ptr<const Context> context, int threads) : context_(std::move(context)), threads_(threads) {}
  const Context& context() const override { return *context_; }
  int threads() const { return threads_; }

  // The NTT-order permutation of X -> X^g, computed once per element.
  const std::vector<std::uint32_t>& automorphism(std::uint32_t galois_element) const;
  KeySwitchWorkspace& workspace() const;
  std::mutex& mutex() const { return mutex_; }

 private:
  std::shared_ptr<const Context> context_;
  int threads_;
  mutable std::mutex mutex_;        // one operation at a time: the stream order
  mutable std::mutex cache_mutex_;
  mutable std::map<std::uint32_t, std::vector<std::uint32_t>> automorphisms_;
  mutable std::unique_ptr<KeySwitchWorkspace> workspace_;
};

// A buffer's residues as words W: u64, or u32 for the 32-bit family (the
// context's word size, stored_word_bytes).
template <class W = u64>
W* words(const PolyArg& p) {
  return reinterpret_cast<W*>(static_cast<CpuBuffer*>(p.buffer)->data());
}
template <class W = u64>
const W* words(const KeyArg& k) {
  return reinterpret_cast<const W*>(static_cast<const CpuBuffer*>(k.buffer)->data());
}

template <class W = u64>
W* limb_of(const PolyArg& p, std::size_t n, int component, int limb) {
  return words<W>(p) +
         (static_cast<std::size_t>(component) * static_cast<std::size_t>(p.limbs) + static_cast<std::size_t>(limb)) * n;
}

// Scratch words of the workspace (sized in 64-bit words, enough for either).
template <class W>
W* scratch(std::vector<u64>& v) {
  return reinterpret_cast<W*>(v.data());
}

// The reduction constants a loop over words W takes: the Barrett Modulus for
// 64-bit words, NarrowModulus for 32-bit ones.
template <class W>
auto reducer(const Modulus& q) {
  if constexpr (sizeof(W) == 8) {
    return q;
  } else {
    return NarrowModulus(q.value);
  }
}

// Shoup's constant of w modulo q in the words' width: the context's
// precomputed 64-bit one, or computed for 32-bit words.
template <class W>
W shoup_constant(u64 w, u64 q, u64 precomputed_64) {
  if constexpr (sizeof(W) == 8) {
    return precomputed_64;
  } else {
    return shoup(static_cast<u32>(w), static_cast<u32>(q));
  }
}

// Calls body(W{}) with the context's stored word.
template <class Body>
void with_word(const Context& c, const Body& body) {
  if (c.word_size() == WordSize::bits32) {
    body(u32{});
  } else {
    body(u64{});
  }
}

}  // namespace fhelium::cpu
