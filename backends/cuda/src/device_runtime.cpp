#include "device_runtime.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "cuda_check.hpp"
#include "fhelium/error.hpp"

namespace fhelium::cuda {

void kernels::SideStream::fork(cudaStream_t main) const {
  check(cudaEventRecord(fork_event, main), "cudaEventRecord (fork)");
  check(cudaStreamWaitEvent(stream, fork_event, 0), "cudaStreamWaitEvent (fork)");
}

void kernels::SideStream::join(cudaStream_t main) const {
  check(cudaEventRecord(join_event, stream), "cudaEventRecord (join)");
  check(cudaStreamWaitEvent(main, join_event, 0), "cudaStreamWaitEvent (join)");
}

namespace {

std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why there is no device, in words a user can act on. The runtime reports a
// machine with no NVIDIA driver at all as an insufficient driver; the driver
// version (0 when none is installed) tells the two apart.
std::string no_device_reason(cudaError_t error) {
  if (error == cudaErrorInsufficientDriver) {
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    if (driver == 0) return "no NVIDIA driver on this machine (no GPU, or its driver is not installed)";
    return "the NVIDIA driver is too old: it supports CUDA " + cuda_version(driver) + ", this build needs " +
           cuda_version(runtime) + " (update the driver)";
  }
  if (error == cudaErrorNoDevice) return "the NVIDIA driver finds no CUDA GPU on this machine";
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

}  // namespace

DeviceRuntime::DeviceRuntime(int device) : device_(device) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError("cuda: no usable CUDA device for device " + std::to_string(device) + ": " +
                       no_device_reason(counted));
  }
  if (device < 0 || device >= count) {
    throw BackendError("cuda: device " + std::to_string(device) + " does not exist: " + std::to_string(count) +
                       " CUDA device(s) present" +
                       (count > 0 ? " (valid ordinals 0.." + std::to_string(count - 1) + ")" : std::string()));
  }
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  name_ = properties.name;
  int pools = 0;
  check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device), "cudaDeviceGetAttribute");
  if (!pools) throw BackendError("cuda: device " + std::to_string(device) + " (" + name_ + ") has no memory pools");

  try {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    int least = 0;
    int greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    for (std::size_t i = 0; i < sides_.size(); ++i) {
      kernels::SideStream& s = sides_[i];
      const bool first_of_lane = i % (1 + branches) == 0;
      check(cudaStreamCreateWithPriority(&s.stream, cudaStreamNonBlocking, first_of_lane ? greatest : least),
            "cudaStreamCreateWithPriority (side)");
      check(cudaEventCreateWithFlags(&s.fork_event, cudaEventDisableTiming), "cudaEventCreate (fork)");
      check(cudaEventCreateWithFlags(&s.join_event, cudaEventDisableTiming), "cudaEventCreate (join)");
    }
    lanes_ = std::make_unique<CaptureLanes>();
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    // Keep freed memory in the pool: steady-state allocations cost no driver call.
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    for (std::size_t i = 0; i < staging_.size(); ++i) {
      check(cudaMallocHost(&staging_[i], staging_bytes), "cudaMallocHost (staging)");
      check(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming), "cudaEventCreate");
    }
  } catch (...) {
    for (std::size_t i = 0; i < staging_.size(); ++i) {
      if (staging_done_[i]) cudaEventDestroy(staging_done_[i]);
      if (staging_[i]) cudaFreeHost(staging_[i]);
    }
    if (pool_) cudaMemPoolDestroy(pool_);
    lanes_.reset();
    destroy_sides();
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

DeviceRuntime::~DeviceRuntime() {
  cudaSetDevice(device_);
  for (const kernels::SideStream& s : sides_) cudaStreamSynchronize(s.stream);
  cudaStreamSynchronize(stream_);
  for (std::size_t i = 0; i < staging_.size(); ++i) {
    cudaEventDestroy(staging_done_[i]);
    cudaFreeHost(staging_[i]);
  }
  cudaMemPoolDestroy(pool_);
  lanes_.reset();
  destroy_sides();
  cudaStreamDestroy(stream_);
}

void DeviceRuntime::destroy_sides() noexcept {
  for (const kernels::SideStream& s : sides_) {
    if (s.join_event) cudaEventDestroy(s.join_event);
    if (s.fork_event) cudaEventDestroy(s.fork_event);
    if (s.stream) cudaStreamDestroy(s.stream);
  }
}

void DeviceRuntime::activate() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

bool DeviceRuntime::stream_capturing() const {
  if (capturing()) return true;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream_, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

void DeviceRuntime::throw_allocation_error(std::size_t bytes, cudaError_t error) const {
  (void)cudaGetLastError();
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  (void)cudaGetLastError();
  throw BackendError("cuda: allocating " + std::to_string(bytes) + " bytes on device " + std::to_string(device_) +
                     " (" + name_ + ") failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error) + " (" +
                     std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total_bytes >> 20) + " MiB)");
}

void* DeviceRuntime::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(capture_mutex_);  // no capture begins meanwhile
  if (capture_arena_) {
    throw StateError("cuda: allocating " + std::to_string(bytes) +
                     " bytes of context tables or workspace is not allowed during capture (prepare the context "
                     "before begin_capture)");
  }
  activate();
  void* pointer = nullptr;
  const cudaError_t error = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream_);
  if (error != cudaSuccess) throw_allocation_error(bytes, error);
  return pointer;
}

void* DeviceRuntime::allocate_buffer(std::size_t bytes, std::shared_ptr<CaptureArena>& arena) {
  if (bytes == 0) return nullptr;
  {
    std::lock_guard lock(capture_mutex_);
    if (!capture_arena_) {
      activate();
      void* pointer = nullptr;
      const cudaError_t error = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream_);
      if (error != cudaSuccess) throw_allocation_error(bytes, error);
      return pointer;
    }
    arena = capture_arena_;
  }
  return arena->allocate(bytes);
}

void DeviceRuntime::release(void* pointer, std::size_t bytes) noexcept {
  if (!pointer) return;
  std::lock_guard lock(capture_mutex_);
  if (capture_arena_) {  // a free node in the graph would free it again on every replay
    capture_arena_->retire(pointer, bytes);
    return;
  }
  cudaSetDevice(device_);
  if (cudaFreeAsync(pointer, stream_) != cudaSuccess) (void)cudaGetLastError();
}

void DeviceRuntime::upload(void* device_dst, const void* host_src, std::size_t bytes) {
  const auto* src = static_cast<const std::byte*>(host_src);
  upload_filled(device_dst, bytes, [&](std::span<std::byte> chunk, std::size_t offset) {
    std::memcpy(chunk.data(), src + offset, chunk.size());
  });
}

void DeviceRuntime::upload_filled(void* device_dst, std::size_t bytes, const Backend::ChunkFill& fill) {
  refuse_during_capture("upload");
  activate();
  std::lock_guard lock(staging_mutex_);
  auto* dst = static_cast<std::byte*>(device_dst);
  std::size_t chunk = 0;
  for (std::size_t offset = 0; offset < bytes; offset += staging_bytes, ++chunk) {
    const std::size_t i = chunk % staging_.size();
    const std::size_t length = std::min(staging_bytes, bytes - offset);
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (staging)");  // previous copy out of it
    fill(std::span(static_cast<std::byte*>(staging_[i]), length), offset);
    check(cudaMemcpyAsync(dst + offset, staging_[i], length, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync (upload)");
    check(cudaEventRecord(staging_done_[i], stream_), "cudaEventRecord (staging)");
  }
}

void DeviceRuntime::download(void* host_dst, const void* device_src, std::size_t bytes) {
  refuse_during_capture("download");
  activate();
  std::lock_guard lock(staging_mutex_);
  auto* dst = static_cast<unsigned char*>(host_dst);
  const auto* src = static_cast<const unsigned char*>(device_src);
  const std::size_t chunks = (bytes + staging_bytes - 1) / staging_bytes;
  auto issue = [&](std::size_t c) {
    const std::size_t i = c % staging_.size();
    const std::size_t offset = c * staging_bytes;
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (staging)");
    check(cudaMemcpyAsync(staging_[i], src + offset, std::min(staging_bytes, bytes - offset), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (download)");
    check(cudaEventRecord(staging_done_[i], stream_), "cudaEventRecord (staging)");
  };
  if (chunks > 0) issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);  // the next chunk copies while this one is read
    const std::size_t i = c % staging_.size();
    const std::size_t offset = c * staging_bytes;
    check(cudaEventSynchronize(staging_done_[i]), "cudaEventSynchronize (download)");
    std::memcpy(dst + offset, staging_[i], std::min(staging_bytes, bytes - offset));
  }
  // Errors of earlier asynchronous work surface here too.
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (download)");
}

void DeviceRuntime::fill(void* device_dst, int byte, std::size_t bytes) {
  refuse_during_capture("fill");
  activate();
  check(cudaMemsetAsync(device_dst, byte, bytes, stream_), "cudaMemsetAsync");
}

void DeviceRuntime::synchronize() {
  refuse_during_capture("synchronize");
  activate();
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

// ---- capture ----

void DeviceRuntime::refuse_during_capture(const char* call) const {
  if (capturing()) {
    throw StateError(std::string("cuda ") + call +
                     " is not allowed during capture (host I/O / synchronization): a replay cannot repeat it; do it "
                     "before begin_capture or after end_capture");
  }
}

void DeviceRuntime::begin_capture() {
  std::lock_guard lock(capture_mutex_);
  if (capture_arena_) throw StateError("cuda begin_capture: a capture is already in progress (end_capture first)");
  activate();
  auto arena = std::make_shared<CaptureArena>(shared_from_this());  // empty: its destructor frees nothing
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  try {
    lanes_->begin(stream_);
  } catch (...) {
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  capture_arena_ = std::move(arena);
  capturing_.store(true, std::memory_order_release);
}

DeviceRuntime::Captured DeviceRuntime::end_capture() {
  Captured captured;
  cudaError_t error = cudaSuccess;
  {
    std::lock_guard lock(capture_mutex_);
    if (!capture_arena_) throw StateError("cuda end_capture: no capture is in progress (begin_capture first)");
    cudaSetDevice(device_);
    error = lanes_->join(stream_);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (error == cudaSuccess) error = ended;
    captured.graph = graph;
    captured.arena = std::move(capture_arena_);
    capturing_.store(false, std::memory_order_release);
    free_now(deferred_blocks_, deferred_retired_);
    deferred_blocks_.clear();
    deferred_retired_.clear();
  }
  captured.arena->close();
  if (error != cudaSuccess) {
    if (captured.graph) cudaGraphDestroy(captured.graph);
    throw_cuda_error(error, "cudaStreamEndCapture (an operation during the capture could not be recorded)");
  }
  return captured;
}

bool DeviceRuntime::abort_capture() noexcept {
  std::shared_ptr<CaptureArena> arena;
  cudaGraph_t graph = nullptr;
  {
    std::lock_guard lock(capture_mutex_);
    if (!capture_arena_) return false;
    cudaSetDevice(device_);
    (void)lanes_->join(stream_);  // a capture ends only once every stream in it has joined
    (void)cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    arena = std::move(capture_arena_);
    capturing_.store(false, std::memory_order_release);
    free_now(deferred_blocks_, deferred_retired_);
    deferred_blocks_.clear();
    deferred_retired_.clear();
  }
  arena->close();
  return true;  // the arena goes with its last buffer
}

LaneStream DeviceRuntime::stream_for(std::span<const MemoryAccess> accesses, bool heavy) {
  if (!capturing()) return {stream_, 0};
  std::lock_guard lock(capture_mutex_);
  return capture_arena_ ? lanes_->schedule(accesses, heavy) : LaneStream{stream_, 0};
}

void DeviceRuntime::operation_issued() {
  if (!capturing()) return;
  std::lock_guard lock(capture_mutex_);
  if (capture_arena_) lanes_->finish();
}

void DeviceRuntime::retain_during_capture(const std::shared_ptr<const void>& object) {
  std::lock_guard lock(capture_mutex_);
  if (capture_arena_) capture_arena_->retain(object);
}

MemoryUsage DeviceRuntime::memory_usage() const {
  std::uint64_t used = 0;
  std::uint64_t high = 0;
  check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used),
        "cudaMemPoolGetAttribute (UsedMemCurrent)");
  check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &high), "cudaMemPoolGetAttribute (UsedMemHigh)");
  // The two high-water marks may come from different moments: their sum bounds the peak.
  return {static_cast<std::size_t>(used) + arena_bytes_.load(), static_cast<std::size_t>(high) + arena_peak_.load()};
}

void DeviceRuntime::count_arena_bytes(std::size_t added, std::size_t removed) noexcept {
  if (added) {
    const std::size_t now = arena_bytes_.fetch_add(added) + added;
    std::size_t peak = arena_peak_.load();
    while (now > peak && !arena_peak_.compare_exchange_weak(peak, now)) {
    }
  }
  if (removed) arena_bytes_.fetch_sub(removed);
}

void DeviceRuntime::free_capture_memory(std::vector<Block> blocks, std::vector<Block> retired) noexcept {
  std::lock_guard lock(capture_mutex_);
  if (capture_arena_) {  // freeing would synchronize with the capturing stream: after the capture
    try {
      deferred_blocks_.insert(deferred_blocks_.end(), blocks.begin(), blocks.end());
      deferred_retired_.insert(deferred_retired_.end(), retired.begin(), retired.end());
    } catch (...) {  // out of host memory: the device memory leaks
    }
    return;
  }
  free_now(blocks, retired);
}

void DeviceRuntime::free_now(const std::vector<Block>& blocks, const std::vector<Block>& retired) noexcept {
  if (blocks.empty() && retired.empty()) return;
  cudaSetDevice(device_);
  // Replays and eager work that may still use the memory finish first.
  (void)cudaStreamSynchronize(stream_);
  for (const Block& b : blocks) (void)cudaFree(b.first);
  for (const Block& b : retired) (void)cudaFreeAsync(b.first, stream_);
  (void)cudaGetLastError();
}

CaptureArena::CaptureArena(std::shared_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}

CaptureArena::~CaptureArena() {
  std::vector<Block> blocks(blocks_.begin(), blocks_.end());
  runtime_->count_arena_bytes(0, block_bytes_);
  if (!blocks.empty() || !retired_.empty()) runtime_->free_capture_memory(std::move(blocks), std::move(retired_));
  // retained_ (contexts) go after the memory, with the members.
}

void* CaptureArena::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  if (open_) {
    auto reusable = free_.lower_bound(bytes);  // the smallest released block that fits
    if (reusable != free_.end()) {
      void* pointer = reusable->second;
      free_.erase(reusable);
      return pointer;
    }
  }
  runtime_->activate();
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, bytes);  // allowed in relaxed capture mode; no graph node
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError("cuda: allocating " + std::to_string(bytes) + " bytes of capture memory on device " +
                       std::to_string(runtime_->device()) + " (" + runtime_->device_name() +
                       ") failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
  }
  try {
    blocks_.emplace(pointer, bytes);
  } catch (...) {
    cudaFree(pointer);
    throw;
  }
  block_bytes_ += bytes;
  runtime_->count_arena_bytes(bytes, 0);
  return pointer;
}

void CaptureArena::release(void* pointer) noexcept {
  if (!pointer) return;
  std::lock_guard lock(mutex_);
  if (!open_) return;  // after the capture a block stays with its recording
  const auto block = blocks_.find(pointer);
  if (block == blocks_.end()) return;
  try {
    free_.emplace(block->second, pointer);
  } catch (...) {  // not reused
  }
}

void CaptureArena::retire(void* pointer, std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  try {
    retired_.emplace_back(pointer, bytes);
    retired_bytes_ += bytes;
  } catch (...) {  // out of host memory: leaks
  }
}

void CaptureArena::retain(std::shared_ptr<const void> object) {
  std::lock_guard lock(mutex_);
  for (const auto& held : retained_) {
    if (held == object) return;
  }
  retained_.push_back(std::move(object));
}

void CaptureArena::close() noexcept {
  std::lock_guard lock(mutex_);
  open_ = false;
  free_.clear();
}

std::size_t CaptureArena::bytes() const {
  std::lock_guard lock(mutex_);
  return block_bytes_ + retired_bytes_;
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<DeviceRuntime> runtime, std::size_t bytes)
    : runtime_(std::move(runtime)), bytes_(bytes) {
  pointer_ = runtime_->allocate_buffer(bytes, arena_);
}

DeviceBuffer::~DeviceBuffer() {
  if (arena_) {
    arena_->release(pointer_);
  } else {
    runtime_->release(pointer_, bytes_);
  }
}

}  // namespace fhelium::cuda
