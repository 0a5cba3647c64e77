#include <algorithm>

#include "cpu_types.hpp"

namespace fhelium::cpu {

std::unique_ptr<u64[]> BufferPool::take(std::size_t words) {
  {
    std::lock_guard lock(mutex_);
    in_use_bytes_ += words * sizeof(u64);
    peak_bytes_ = std::max(peak_bytes_, in_use_bytes_);
    auto it = free_.find(words);
    if (it != free_.end() && !it->second.empty()) {
      auto data = std::move(it->second.back());
      it->second.pop_back();
      cached_bytes_ -= words * sizeof(u64);
      return data;
    }
  }
  return std::unique_ptr<u64[]>(new u64[words]);
}

MemoryUsage BufferPool::usage() const {
  std::lock_guard lock(mutex_);
  return {in_use_bytes_, peak_bytes_};
}

void BufferPool::give(std::size_t words, std::unique_ptr<u64[]> data) {
  {
    std::lock_guard lock(mutex_);
    in_use_bytes_ -= words * sizeof(u64);
  }
#if defined(__SANITIZE_ADDRESS__)
  return;  // freed at once, so AddressSanitizer sees every use after free
#endif
  const std::size_t bytes = words * sizeof(u64);
  std::vector<std::unique_ptr<u64[]>> evicted;  // freed after the lock is released
  std::lock_guard lock(mutex_);
  std::vector<std::unique_ptr<u64[]>>& same = free_[words];
  if (bytes + same.size() * bytes > max_cached_bytes) return;  // this size alone would pass the cap
  // Over the cap, buffers of other sizes go first, one at a time: the sizes
  // in use now (a new context's, say) keep being recycled instead of
  // faulting in fresh pages on every allocation.
  for (auto it = free_.begin(); cached_bytes_ + bytes > max_cached_bytes && it != free_.end();) {
    if (it->first == words || it->second.empty()) {
      ++it;
      continue;
    }
    evicted.push_back(std::move(it->second.back()));
    it->second.pop_back();
    cached_bytes_ -= it->first * sizeof(u64);
  }
  cached_bytes_ += bytes;
  same.push_back(std::move(data));
}

const std::vector<std::uint32_t>& CpuContext::automorphism(std::uint32_t galois_element) const {
  std::lock_guard lock(cache_mutex_);
  auto it = automorphisms_.find(galois_element);
  if (it == automorphisms_.end()) {
    it = automorphisms_.emplace(galois_element, context_->ntt_automorphism_permutation(galois_element)).first;
  }
  return it->second;
}

KeySwitchWorkspace& CpuContext::workspace() const {
  if (!workspace_) {
    const Context& c = *context_;
    const std::size_t n = c.ring_degree();
    const auto q_limbs = static_cast<std::size_t>(c.q_count());
    const auto key_limbs = static_cast<std::size_t>(c.key_limbs());
    auto ws = std::make_unique<KeySwitchWorkspace>();
    ws->coefficients.resize(q_limbs * n);
    ws->extended.resize(static_cast<std::size_t>(c.key_digits()) * key_limbs * n);
    ws->accumulators.resize(2 * key_limbs * n);
    ws->rotated.resize(2 * q_limbs * n);
    ws->converted.resize(2 * q_limbs * n);
    ws->slot_scratch.resize(static_cast<std::size_t>(threads_) * 5 * n);
    workspace_ = std::move(ws);
  }
  return *workspace_;
}

}  // namespace fhelium::cpu
