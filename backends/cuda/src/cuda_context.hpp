// The CUDA backend's tables for one Context (twiddles, primes, RNS constants
// of every level) and its key-switching workspace, uploaded or allocated
// once: in prepare(), a capture lane's workspace when a capture first begins.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "device_allocation.hpp"
#include "device_runtime.hpp"
#include "device_types.hpp"
#include "fhelium/backend/backend.hpp"
#include "kernels.hpp"

namespace fhelium::cuda {

namespace narrow {
class Tables;
}

// Everything here is allocated in the constructor (prepare), but for the
// capture lanes' workspaces (provide_capture_lanes, before a capture
// begins): no operation allocates, so operations can be captured into a graph. A capture keeps the
// contexts its operations used alive until its recording is gone.
class CudaContext final : public BackendContext, public std::enable_shared_from_this<CudaContext> {
 public:
  CudaContext(std::shared_ptr<const Context> context, std::shared_ptr<DeviceRuntime> runtime);
  ~CudaContext() override;
  const Context& context() const override { return *context_; }
  // The 32-bit word family's tables and workspace, or null (64-bit words:
  // every other accessor serves those).
  const narrow::Tables* narrow() const { return narrow_.get(); }
  const std::shared_ptr<DeviceRuntime>& runtime() const { return runtime_; }

  // Up to this ring degree multiply_relinearize is one fused call (its
  // product a1 b1 in work(lane).product); above it, the two calls (and no product).
  // 2^15: at 2^16 the fused call measured slower than the two (574 us vs 570).
  static constexpr std::size_t fused_multiply_limit = std::size_t{1} << 15;
  bool fuses_multiply() const { return !narrow_ && context_->ring_degree() <= fused_multiply_limit; }
  // Whether multiply_relinearize_rescale of operands of `limbs` limbs is a
  // multiply and one key switch whose ModDown takes the rescale: 64-bit
  // words where ModDown takes its general path (kernels::RescaleAfter,
  // kernels::fuses_rescale: not the one-special-prime paths of 2^11..2^14,
  // where the fused call measured no faster than the two); 32-bit words where
  // the rescale drops contiguous limbs (narrow::mod_down_rescale).
  bool fuses_rescale(int limbs) const;
  // A hoisted batch's rotations run on branches (branch_work) where a
  // level's key switch extends to at most this many words per polynomial
  // (slots x N): one rotation's latency-bound launches leave the GPU partly
  // idle there (every level at 2^14 and 2^15, a 2^16 bootstrap's
  // SlotToCoeff), while at 2^16's upper levels one rotation fills it.
  static constexpr std::size_t hoisted_branch_words = std::size_t{20} << 16;
  bool hoisted_on_branches(const KeySwitchView& ks) const;

  kernels::Launch launch() const;
  const KeySwitchView& key_switch(int level) const { return key_switch_.at(static_cast<std::size_t>(level)); }
  const RescaleView& rescale(int level) const { return rescale_.at(static_cast<std::size_t>(level)); }
  // The key-switching workspace of a key-switching lane (DeviceRuntime::
  // key_switch_lanes; 0 outside a capture): the lane's stream order keeps
  // it to one key switch at a time. Lane 0's is built with the context; the
  // other lanes' (about 430 MB each at the 2^16 bootstrap preset) by
  // provide_capture_lanes, which the backend calls when a capture begins,
  // so a context only ever used eagerly never holds them.
  const kernels::KeySwitchWork& work(int lane) const { return lanes_.at(static_cast<std::size_t>(lane)).work; }
  // One workspace per runtime branch of the lane, for a hoisted batch's
  // rotations run side by side: own accumulators and converted limbs,
  // ModUp's buffers shared (75 MB a branch at 2^16's top level).
  const std::vector<kernels::KeySwitchWork>& branch_work(int lane) const {
    return lanes_.at(static_cast<std::size_t>(lane)).branches;
  }
  // 3 x N words for a rescale on capture lane `lane` (any of CaptureLanes::count).
  u64* rescale_temp(int lane) const { return rescale_temps_.at(static_cast<std::size_t>(lane)); }
  std::size_t table_bytes() const { return table_bytes_; }
  std::size_t workspace_bytes() const;
  // Allocates the workspaces of every key-switching lane not yet built.
  // Outside a capture, with no operation in flight on this context (the
  // backend holds its lock).
  void provide_capture_lanes();

 private:
  // One key-switching lane's workspace, appended to lanes_.
  void add_lane();

  std::shared_ptr<const Context> context_;
  std::shared_ptr<DeviceRuntime> runtime_;
  std::unique_ptr<narrow::Tables> narrow_;
  DeviceAllocation tables_;     // twiddles, primes and RNS constants
  DeviceAllocation views_;      // ConverterView arrays (they point into tables_)
  NttTables ntt_{};
  std::vector<KeySwitchView> key_switch_;
  std::vector<RescaleView> rescale_;
  struct LaneWork {
    kernels::KeySwitchWork work{};
    std::vector<kernels::KeySwitchWork> branches;
  };
  WorkspacePool workspace_pool_;  // every buffer of lanes_ and rescale_temps_
  std::vector<LaneWork> lanes_;
  std::vector<u64*> rescale_temps_;
  std::size_t table_bytes_ = 0;
};

}  // namespace fhelium::cuda
