// One device's stream, stream-ordered memory pool and pinned staging buffers,
// and the capture state of that stream. Every buffer and context of a CUDA
// backend holds a shared_ptr to it, so the stream and pool outlive them.
//
// Capture (a CUDA Graph of the stream's work): while capturing, buffers come
// from a CaptureArena (cudaMalloc blocks, never the stream-ordered pool, so
// the graph has no allocation nodes and stays relaunchable). A buffer
// released during the capture returns its block to the arena for later
// capture allocations (its new users wait for its old ones: the capture
// lanes order operations by the addresses they touch). Pool
// memory released during the capture is kept by the arena too (the graph may
// read it). The arena is shared by the recording and every buffer it served;
// its memory is freed when the last of them is gone, after the stream's work.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "capture_lanes.hpp"
#include "fhelium/backend/backend.hpp"
#include "kernels.hpp"

namespace fhelium::cuda {

class CaptureArena;

// A block of device memory: pointer and size.
using Block = std::pair<void*, std::size_t>;

class DeviceRuntime : public std::enable_shared_from_this<DeviceRuntime> {
 public:
  // Throws BackendError when the device does not exist or cannot be used.
  explicit DeviceRuntime(int device);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  int device() const { return device_; }
  const std::string& device_name() const { return name_; }
  cudaStream_t stream() const { return stream_; }
  // A second stream, of the device's greatest priority, for work beside the
  // main stream's within one operation (kernels::SideStream: fork, join).
  // The priority lets its short, latency-bound chains take SMs as soon as
  // they free instead of queueing behind the main stream's large grids
  // (graphs keep it: kernel nodes take their stream's priority in a
  // capture, and are instantiated with cudaGraphInstantiateFlagUseNodePriority).
  // Each key-switching lane of a capture (CaptureLanes::heavy_count; lane 0
  // outside one) has its own, so two lanes' key switches share no stream.
  static constexpr int key_switch_lanes = CaptureLanes::heavy_count;
  const kernels::SideStream& side(int lane) const { return sides_.at(first_side(lane)); }
  // Streams for independent chains of one operation (a hoisted batch's
  // rotations), of the default priority: branch(lane, i), i < branches.
  static constexpr int branches = 4;
  const kernels::SideStream& branch(int lane, int i) const {
    return sides_.at(first_side(lane) + 1 + static_cast<std::size_t>(i));
  }
  // Makes this runtime's device current on the calling thread.
  void activate() const;

  // Stream-ordered allocation from the pool (no host synchronization).
  // Refused with StateError while capturing (context tables and workspace
  // are allocated in prepare, before any capture).
  void* allocate(std::size_t bytes);
  // Memory for a buffer: from the pool, or while capturing from the capture's
  // arena (then `arena` is set and the block goes back to it).
  void* allocate_buffer(std::size_t bytes, std::shared_ptr<CaptureArena>& arena);
  // Pool memory back to the pool, stream-ordered; while capturing it is kept
  // by the capture's arena until the recording is gone.
  void release(void* pointer, std::size_t bytes) noexcept;

  // Host -> device through pinned staging; returns once the host memory may
  // be reused (the copy itself may still be in flight on the stream).
  void upload(void* device_dst, const void* host_src, std::size_t bytes);
  // Host -> device where `fill` writes each chunk straight into the pinned
  // staging (Backend::upload_filled); the chunks are staging_bytes.
  void upload_filled(void* device_dst, std::size_t bytes, const Backend::ChunkFill& fill);
  // Device -> host through pinned staging; waits for the stream.
  void download(void* host_dst, const void* device_src, std::size_t bytes);
  // Fills device memory with a byte value (stream-ordered).
  void fill(void* device_dst, int byte, std::size_t bytes);
  void synchronize();

  // ---- capture of the stream ----
  bool capturing() const noexcept { return capturing_.load(std::memory_order_acquire); }
  // Whether the stream is being captured by anyone (begin_capture, or a
  // caller's cudaStreamBeginCapture on stream()).
  bool stream_capturing() const;
  // Throws StateError naming `call` while capturing.
  void refuse_during_capture(const char* call) const;
  // The stream an operation that touches `accesses` issues its launches on:
  // during begin_capture's capture a lane, after waiting for the operations
  // it depends on (capture_lanes.hpp), else the stream. operation_issued()
  // after its launches.
  // `heavy`: a key switch (LanePlanner::add).
  LaneStream stream_for(std::span<const MemoryAccess> accesses, bool heavy = false);
  void operation_issued();
  // cudaStreamBeginCapture (relaxed mode) with a new arena. StateError when
  // a capture is already in progress.
  void begin_capture();
  struct Captured {
    cudaGraph_t graph = nullptr;
    std::shared_ptr<CaptureArena> arena;
  };
  // cudaStreamEndCapture. StateError when no capture is in progress;
  // BackendError (after ending the capture) when the capture was invalidated.
  Captured end_capture();
  // Ends the capture and discards its partial graph; false when none was in progress.
  bool abort_capture() noexcept;
  // While capturing: `object` lives as long as the capture's arena.
  void retain_during_capture(const std::shared_ptr<const void>& object);

  // Pool in use (and its high-water mark) plus capture arenas.
  MemoryUsage memory_usage() const;

  // For arenas: their blocks' bytes, and their memory once unused.
  void count_arena_bytes(std::size_t added, std::size_t removed) noexcept;
  void free_capture_memory(std::vector<Block> blocks, std::vector<Block> retired) noexcept;

 private:
  static constexpr std::size_t staging_bytes = Backend::upload_chunk_bytes;
  [[noreturn]] void throw_allocation_error(std::size_t bytes, cudaError_t error) const;
  void free_now(const std::vector<Block>& blocks, const std::vector<Block>& retired) noexcept;
  void destroy_sides() noexcept;

  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  static std::size_t first_side(int lane) { return static_cast<std::size_t>(lane) * (1 + branches); }
  // Per key-switching lane: side(lane), then its branches.
  std::array<kernels::SideStream, key_switch_lanes*(1 + branches)> sides_{};
  std::unique_ptr<CaptureLanes> lanes_;
  cudaMemPool_t pool_ = nullptr;
  std::array<void*, 2> staging_{};
  std::array<cudaEvent_t, 2> staging_done_{};
  std::mutex staging_mutex_;

  // Capture state: the arena of the capture in progress, and memory of other
  // arenas whose last user went away during it (freed when it ends).
  mutable std::mutex capture_mutex_;
  std::atomic<bool> capturing_{false};
  std::shared_ptr<CaptureArena> capture_arena_;
  std::vector<Block> deferred_blocks_;
  std::vector<Block> deferred_retired_;
  std::atomic<std::size_t> arena_bytes_{0};
  std::atomic<std::size_t> arena_peak_{0};
};

// Device memory of one capture (see above). Thread-safe.
class CaptureArena {
 public:
  explicit CaptureArena(std::shared_ptr<DeviceRuntime> runtime);
  ~CaptureArena();
  CaptureArena(const CaptureArena&) = delete;
  CaptureArena& operator=(const CaptureArena&) = delete;

  // A block of at least `bytes`: a released one while the capture is open, else cudaMalloc.
  void* allocate(std::size_t bytes);
  // A block served by allocate is no longer used by its buffer.
  void release(void* pointer) noexcept;
  // Pool memory released during the capture: kept until the arena is gone.
  void retire(void* pointer, std::size_t bytes) noexcept;
  // Keeps an object the graph refers to (a context's tables) alive with the arena.
  void retain(std::shared_ptr<const void> object);
  // The capture has ended: no block is reused any more.
  void close() noexcept;
  // Blocks and retired pool memory held.
  std::size_t bytes() const;

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  mutable std::mutex mutex_;
  bool open_ = true;
  std::unordered_map<void*, std::size_t> blocks_;
  std::multimap<std::size_t, void*> free_;  // released blocks by size
  std::vector<Block> retired_;
  std::vector<std::shared_ptr<const void>> retained_;
  std::size_t block_bytes_ = 0;
  std::size_t retired_bytes_ = 0;
};

// Backend memory: `bytes` bytes of device memory from the runtime's pool, or
// from the capture arena when allocated during a capture.
class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(std::shared_ptr<DeviceRuntime> runtime, std::size_t bytes);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t size_bytes() const override { return bytes_; }
  std::uint64_t* data() const { return static_cast<std::uint64_t*>(pointer_); }
  const DeviceRuntime& runtime() const { return *runtime_; }
  bool from_capture() const { return arena_ != nullptr; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;  // declared first: outlives arena_
  std::shared_ptr<CaptureArena> arena_;
  void* pointer_ = nullptr;
  std::size_t bytes_;
};

}  // namespace fhelium::cuda
