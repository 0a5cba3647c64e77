// The CUDA backend class: argument checks on the host, then kernels on the
// runtime's stream. Operations return before the work is done; download and
// synchronize wait. One operation at a time issues its launches; a key
// switch uses its lane's workspace, kept to one at a time by that lane's stream.
//
// Streams and events are CUDA streams (non-blocking) and events (no timing).
// Capture records the runtime stream's work into a CUDA Graph (relaxed mode):
// each operation declares what it reads and writes and goes to a capture
// lane that waits only for the operations it depends on (capture_lanes.hpp).
// Buffers allocated meanwhile come from the capture's arena (see
// device_runtime.hpp). An operation that fails during a capture ends it and
// discards the partial graph, so the backend stays usable; end_capture then
// reports the failure.
#include "fhelium/cuda/cuda_backend.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "device_runtime.hpp"
#include "eager_graph.hpp"
#include "fhelium/error.hpp"
#include "kernels.hpp"
#include "narrow_operations.hpp"
#include "nccl_communicator.hpp"
#include "term_chunks.hpp"

namespace fhelium::cuda {
namespace {

class CudaStream final : public Stream {
 public:
  explicit CudaStream(std::shared_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {
    runtime_->activate();
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (create_stream)");
  }
  ~CudaStream() override {
    cudaSetDevice(runtime_->device());
    cudaStreamDestroy(stream_);  // returns at once; pending work completes
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }
  const DeviceRuntime& runtime() const { return *runtime_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  cudaStream_t stream_ = nullptr;
};

class CudaEvent final : public Event {
 public:
  // Events that do not time are lighter to record and to wait on.
  CudaEvent(std::shared_ptr<DeviceRuntime> runtime, bool timing) : runtime_(std::move(runtime)), timing_(timing) {
    runtime_->activate();
    check(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming),
          "cudaEventCreateWithFlags (create_event)");
  }
  ~CudaEvent() override {
    cudaSetDevice(runtime_->device());
    cudaEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }
  bool timing() const { return timing_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;
  bool timing_;
  cudaEvent_t event_ = nullptr;
};

// An instantiated graph and the arena its buffers live in.
class CudaRecording final : public Recording {
 public:
  CudaRecording(std::shared_ptr<DeviceRuntime> runtime, cudaGraphExec_t exec, std::shared_ptr<CaptureArena> arena,
                std::size_t nodes, std::size_t roots)
      : runtime_(std::move(runtime)), arena_(std::move(arena)), exec_(exec), nodes_(nodes), roots_(roots) {}
  ~CudaRecording() override {
    if (exec_) {
      cudaSetDevice(runtime_->device());
      cudaGraphExecDestroy(exec_);  // an in-flight launch finishes first (freed on completion)
      (void)cudaGetLastError();
    }
    // arena_: its memory is freed after the stream's work, once its last buffer is gone too.
  }
  CudaRecording(const CudaRecording&) = delete;
  CudaRecording& operator=(const CudaRecording&) = delete;

  void launch() override {
    runtime_->refuse_during_capture("Recording::launch");
    if (!exec_) return;  // nothing was recorded
    std::lock_guard lock(mutex_);
    runtime_->activate();
    check(cudaGraphLaunch(exec_, runtime_->stream()), "cudaGraphLaunch");
  }
  std::size_t memory_bytes() const override { return arena_->bytes(); }
  std::size_t operation_count() const override { return nodes_; }
  std::size_t root_count() const { return roots_; }

 private:
  std::shared_ptr<DeviceRuntime> runtime_;  // declared first: outlives arena_
  std::shared_ptr<CaptureArena> arena_;
  cudaGraphExec_t exec_ = nullptr;
  std::size_t nodes_ = 0;
  std::size_t roots_ = 0;
  std::mutex mutex_;  // one launch of the executable graph at a time
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions options) : runtime_(std::make_shared<DeviceRuntime>(options.device)) {}
  ~CudaBackend() override {
    runtime_->abort_capture();          // breaks the runtime <-> arena cycle
    cudaSetDevice(runtime_->device());  // eager_graphs_ goes next, on this device
  }

  std::string name() const override { return "cuda"; }
  cudaStream_t stream() const { return runtime_->stream(); }
  int device() const { return runtime_->device(); }

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    if (!context) throw BackendError("cuda prepare: null context");
    runtime_->refuse_during_capture("prepare (building context tables)");
    std::lock_guard lock(mutex_);
    auto& slot = contexts_[context->id()];
    if (auto cached = slot.lock()) return cached;
    auto prepared = std::make_shared<CudaContext>(std::move(context), runtime_);
    slot = prepared;
    return prepared;
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    std::shared_ptr<Buffer> buffer;
    guarded("allocate", [&] { buffer = std::make_shared<DeviceBuffer>(runtime_, bytes); });
    return buffer;
  }

  void upload(Buffer& dst, const void* src, std::size_t bytes) override {
    runtime_->refuse_during_capture("upload");
    runtime_->upload(device_buffer(dst, bytes, "upload", runtime_->device()).data(), src, bytes);
  }

  void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) override {
    runtime_->refuse_during_capture("upload");
    runtime_->upload_filled(device_buffer(dst, bytes, "upload", runtime_->device()).data(), bytes, fill);
  }

  void download(const Buffer& src, void* dst, std::size_t bytes) override {
    runtime_->refuse_during_capture("download");
    runtime_->download(dst, device_buffer(src, bytes, "download", runtime_->device()).data(), bytes);
  }

  void synchronize() override { runtime_->synchronize(); }

  // ---- streams, events, copies, memory ----

  std::shared_ptr<Stream> create_stream() override {
    runtime_->refuse_during_capture("create_stream");
    return std::make_shared<CudaStream>(runtime_);
  }

  std::shared_ptr<Event> create_event() override {
    runtime_->refuse_during_capture("create_event");
    return std::make_shared<CudaEvent>(runtime_, false);
  }

  std::shared_ptr<Event> create_timing_event() override {
    runtime_->refuse_during_capture("create_timing_event");
    return std::make_shared<CudaEvent>(runtime_, true);
  }

  double elapsed_seconds(const Event& start, const Event& end) override {
    runtime_->refuse_during_capture("elapsed_seconds");
    for (const Event* e : {&start, &end}) {
      const auto* cuda_event = dynamic_cast<const CudaEvent*>(e);
      if (cuda_event && !cuda_event->timing()) {
        throw InvalidArgumentError("elapsed_seconds: an event made by create_event, not create_timing_event");
      }
    }
    const cudaEvent_t s = event_of(start, "elapsed_seconds (start)");
    const cudaEvent_t e = event_of(end, "elapsed_seconds (end)");
    runtime_->activate();
    check(cudaEventSynchronize(e), "cudaEventSynchronize (elapsed_seconds)");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, s, e), "cudaEventElapsedTime (elapsed_seconds)");
    return ms * 1e-3;
  }

  void record_event(Event& event, Stream* stream) override {
    runtime_->refuse_during_capture("record_event");
    const cudaEvent_t e = event_of(event, "record_event");
    const cudaStream_t s = stream_of(stream, "record_event");
    runtime_->activate();
    check(cudaEventRecord(e, s), "cudaEventRecord (record_event)");
  }

  void wait_event(Stream* stream, const Event& event) override {
    runtime_->refuse_during_capture("wait_event");
    const cudaEvent_t e = event_of(event, "wait_event");
    const cudaStream_t s = stream_of(stream, "wait_event");
    runtime_->activate();
    check(cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent (wait_event)");
  }

  void synchronize_event(const Event& event) override {
    runtime_->refuse_during_capture("synchronize_event");
    const cudaEvent_t e = event_of(event, "synchronize_event");
    runtime_->activate();
    check(cudaEventSynchronize(e), "cudaEventSynchronize (synchronize_event)");
  }

  // During a capture a copy is recorded on a capture lane like an operation
  // (after what wrote its source or last used its destination), whatever
  // `stream` was given: the graph is the backend stream's work.
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream) override {
    guarded("copy", [&] {
      void* to = device_buffer(dst, bytes, "copy (destination)", runtime_->device()).data();
      const void* from = device_buffer(src, bytes, "copy (source)", runtime_->device()).data();
      const cudaStream_t eager = runtime_->capturing() ? nullptr : stream_of(stream, "copy");
      if (bytes == 0) return;
      runtime_->activate();
      if (eager) {
        check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, eager), "cudaMemcpyAsync (copy)");
        return;
      }
      std::lock_guard lock(mutex_);  // one operation at a time on the lanes
      const MemoryAccess accesses[] = {access_of(from, bytes, false), access_of(to, bytes, true)};
      check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, runtime_->stream_for(accesses).stream),
            "cudaMemcpyAsync (copy)");
      runtime_->operation_issued();
    });
  }

  MemoryUsage memory_usage() const override { return runtime_->memory_usage(); }

  bool has_device_collectives() const override { return nccl_loads(); }
  std::optional<CommunicatorId> communicator_id() override { return nccl_communicator_id(); }
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                        std::chrono::milliseconds timeout) override {
    return join_nccl_communicator(runtime_, id, ranks, rank, timeout);
  }

  // ---- capture ----

  bool supports_capture() const override { return true; }
  bool capturing() const override { return runtime_->capturing(); }

  void begin_capture() override {
    std::lock_guard lock(mutex_);  // no operation is half issued
    // Every key-switching lane's workspace, before the capture starts
    // (prepare is refused during a capture: every context it uses is here).
    // Not while the caller captures the stream itself: the allocations would
    // belong to the caller's graph, and begin_capture fails there anyway.
    if (!runtime_->stream_capturing()) {
      for (auto& [id, slot] : contexts_) {
        if (const auto prepared = slot.lock()) prepared->provide_capture_lanes();
      }
    }
    runtime_->begin_capture();
    abandoned_.clear();
  }

  std::unique_ptr<Recording> end_capture() override {
    std::lock_guard lock(mutex_);
    if (!runtime_->capturing()) {
      if (!abandoned_.empty()) {
        throw BackendError("cuda end_capture: the capture was already ended and discarded because " +
                           std::exchange(abandoned_, std::string()));
      }
      throw StateError("cuda end_capture: no capture is in progress (begin_capture first)");
    }
    DeviceRuntime::Captured captured = runtime_->end_capture();
    // From here the capture is over: a failure discards the graph (the arena
    // goes with its last buffer).
    std::size_t nodes = 0;
    std::size_t roots = 0;
    cudaGraphExec_t exec = nullptr;
    cudaError_t error = cudaGraphGetNodes(captured.graph, nullptr, &nodes);
    if (error == cudaSuccess) error = cudaGraphGetRootNodes(captured.graph, nullptr, &roots);
    if (error == cudaSuccess && nodes > 0)
      error = cudaGraphInstantiate(&exec, captured.graph, cudaGraphInstantiateFlagUseNodePriority);
    cudaGraphDestroy(captured.graph);
    if (error != cudaSuccess) throw_cuda_error(error, "cudaGraphInstantiate (end_capture)");
    return std::make_unique<CudaRecording>(runtime_, exec, std::move(captured.arena), nodes, roots);
  }

  void add(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    guarded("add", [&] {
      Op op(*this, bc, "add");
      const kernels::Poly o = op.out(out), x = op.in(a), y = op.in(b);
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::add(op.stream(), op.n(), primes, op.n32(o), op.n32(x), op.n32(y)); });
      }
      op.issue([&] { kernels::add(op.launch, o, x, y); });
    });
  }

  void sub(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    guarded("sub", [&] {
      Op op(*this, bc, "sub");
      const kernels::Poly o = op.out(out), x = op.in(a), y = op.in(b);
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::sub(op.stream(), op.n(), primes, op.n32(o), op.n32(x), op.n32(y)); });
      }
      op.issue([&] { kernels::sub(op.launch, o, x, y); });
    });
  }

  void negate(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("negate", [&] {
      Op op(*this, bc, "negate");
      const kernels::Poly o = op.out(out), x = op.in(a);
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::negate(op.stream(), op.n(), primes, op.n32(o), op.n32(x)); });
      }
      op.issue([&] { kernels::negate(op.launch, o, x); });
    });
  }

  void add_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override {
    guarded("add_constant", [&] {
      Op op(*this, bc, "add_constant");
      op.require_residues(residues, out.limbs);
      const kernels::Poly o = op.out(out), x = op.in(a);
      if (op.narrow) {
        const narrow::LimbConstants r = op.limb_constants(out, residues);
        const narrow::Prime* primes = op.primes(out);
        return op.issue(
            [&] { narrow::add_constant(op.stream(), op.n(), primes, op.n32(o), op.n32(x), r, ntt_domain); });
      }
      op.issue([&] { kernels::add_constant(op.launch, o, x, residues, ntt_domain); });
    });
  }

  void multiply_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override {
    guarded("multiply_constant", [&] {
      Op op(*this, bc, "multiply_constant");
      op.require_residues(residues, out.limbs);
      if (op.narrow) {
        const narrow::LimbConstants w = op.limb_constants(out, residues);
        const kernels::Poly o = op.out(out), x = op.in(a);
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::multiply_constant(op.stream(), op.n(), primes, op.n32(o), op.n32(x), w); });
      }
      std::vector<u64> shoup_constants(static_cast<std::size_t>(out.limbs));
      for (int i = 0; i < out.limbs; ++i) {
        const auto index = static_cast<std::size_t>(i);
        shoup_constants[index] = shoup(residues[index], op.context.q()[index].value);
      }
      const kernels::Poly o = op.out(out), x = op.in(a);
      op.issue([&] { kernels::multiply_constant(op.launch, o, x, residues, shoup_constants); });
    });
  }

  void multiply_plain(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    guarded("multiply_plain", [&] {
      Op op(*this, bc, "multiply_plain");
      const kernels::Poly o = op.out(out), x = op.in(a), y = op.in(p);
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::multiply_plain(op.stream(), op.n(), primes, op.n32(o), op.n32(x), op.n32(y)); });
      }
      op.issue([&] { kernels::multiply_plain(op.launch, o, x, y); });
    });
  }

  void sum_products(const BackendContext& bc, const PolyArg& out, std::span<const PolyArg> a,
                    std::span<const PolyArg> p) override {
    guarded("sum_products", [&] {
      check_sum_products(out, a, p);
      Op op(*this, bc, "sum_products");
      const kernels::Poly o = op.out(out);
      std::vector<kernels::Poly> terms;
      std::vector<kernels::Poly> plains;
      for (const PolyArg& term : a) terms.push_back(op.in(term));
      for (const PolyArg& plain : p) plains.push_back(op.in(plain));
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        std::vector<narrow::Poly> terms32;
        std::vector<narrow::Poly> plains32;
        for (const kernels::Poly& term : terms) terms32.push_back(op.n32(term));
        for (const kernels::Poly& plain : plains) plains32.push_back(op.n32(plain));
        return op.issue([&] { narrow::sum_products(op.stream(), op.n(), primes, op.n32(o), terms32, plains32); });
      }
      op.issue([&] { kernels::sum_products(op.launch, o, terms, plains); });
    });
  }

  void sum_constant_products(const BackendContext& bc, const PolyArg& out, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override {
    guarded("sum_constant_products", [&] {
      check_sum_constant_products(out, a, r);
      Op op(*this, bc, "sum_constant_products");
      const kernels::Poly o = op.out(out);
      std::vector<kernels::Poly> terms;
      for (const PolyArg& term : a) terms.push_back(op.in(term));
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        std::vector<narrow::Poly> terms32;
        for (const kernels::Poly& term : terms) terms32.push_back(op.n32(term));
        return op.issue([&] { narrow::sum_constant_products(op.stream(), op.n(), primes, op.n32(o), terms32, r); });
      }
      op.issue([&] { kernels::sum_constant_products(op.launch, o, terms, r); });
    });
  }

  // Outputs of three components and groups with two terms on one
  // ciphertext run the default (sum_products per group).
  void sum_product_groups(const BackendContext& bc, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                          std::span<const PolyArg> p, std::span<const std::size_t> ends) override {
    bool fused = false;
    guarded("sum_product_groups", [&] {
      check_sum_product_groups(outs, a, p, ends);
      Op op(*this, bc, "sum_product_groups");
      std::vector<kernels::Poly> results, terms, plains;
      for (const PolyArg& out : outs) results.push_back(op.out(out));
      for (const PolyArg& term : a) terms.push_back(op.in(term));
      for (const PolyArg& plain : p) plains.push_back(op.in(plain));
      if (outs[0].components != 2 || !one_term_per_input<kernels::Poly>(terms, ends)) return;
      fused = true;
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(outs[0]);
        std::vector<narrow::Poly> results32, terms32, plains32;
        for (const kernels::Poly& x : results) results32.push_back(op.n32(x));
        for (const kernels::Poly& x : terms) terms32.push_back(op.n32(x));
        for (const kernels::Poly& x : plains) plains32.push_back(op.n32(x));
        return op.issue(
            [&] { narrow::sum_product_groups(op.stream(), op.n(), primes, results32, terms32, plains32, ends); });
      }
      op.issue([&] { kernels::sum_product_groups(op.launch, results, terms, plains, ends); });
    });
    if (!fused) Backend::sum_product_groups(bc, outs, a, p, ends);
  }

  void multiply(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    guarded("multiply", [&] {
      Op op(*this, bc, "multiply");
      op.require_shape(out, 3, out.limbs, "output");
      op.require_shape(a, 2, out.limbs, "first operand");
      op.require_shape(b, 2, out.limbs, "second operand");
      const kernels::Poly o = op.out(out), x = op.in(a), y = op.in(b);
      if (op.narrow) {
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::multiply(op.stream(), op.n(), primes, op.n32(o), op.n32(x), op.n32(y)); });
      }
      op.issue([&] { kernels::multiply(op.launch, o, x, y); });
    });
  }

  void to_ntt(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("to_ntt", [&] {
      Op op(*this, bc, "to_ntt");
      const kernels::Poly o = op.out(out), x = op.in(a);
      if (op.narrow) {
        const int level = op.level(out);
        return op.issue([&] { narrow::to_ntt(op.site(), level, op.n32(o), op.n32(x)); });
      }
      op.issue([&] { kernels::to_ntt(op.launch, o, x); });
    });
  }

  void to_coefficient(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("to_coefficient", [&] {
      Op op(*this, bc, "to_coefficient");
      const kernels::Poly o = op.out(out), x = op.in(a);
      if (op.narrow) {
        const int level = op.level(out);
        return op.issue([&] { narrow::to_coefficient(op.site(), level, op.n32(o), op.n32(x)); });
      }
      op.issue([&] { kernels::to_coefficient(op.launch, o, x); });
    });
  }

  void rescale(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("rescale", [&] {
      Op op(*this, bc, "rescale");
      if (op.narrow) {
        const int level = op.level(a);
        if (level < 1 || op.context.level_basis(level - 1).count != out.limbs || out.components != a.components) {
          throw BackendError("cuda rescale: input of " + std::to_string(a.limbs) + " limbs (level " +
                             std::to_string(level) + ") and output of " + std::to_string(out.limbs) +
                             " limbs, expected the limbs of the level below and as many components");
        }
        const kernels::Poly o = op.out(out), x = op.in(a);
        op.uses_key_switch_work();
        return op.issue([&] { narrow::rescale(op.site(), level, op.n32(o), op.n32(x)); });
      }
      if (a.limbs != out.limbs + 1 || out.limbs < 1 || a.components > 3) {
        throw BackendError("cuda rescale: input has " + std::to_string(a.limbs) + " limbs and output " +
                           std::to_string(out.limbs) + ", expected one limb fewer (and at most 3 components)");
      }
      const kernels::Poly o = op.out(out), x = op.in(a);
      op.issue([&] { kernels::rescale(op.launch, op.ctx.rescale(out.limbs), o, x, op.ctx.rescale_temp(op.lane)); });
    });
  }

  void drop_limbs(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("drop_limbs", [&] {
      Op op(*this, bc, "drop_limbs");
      const kernels::Poly o = op.out(out), x = op.in(a);
      if (op.narrow) {
        // out's primes are a window of a's: they start `offset` limbs in.
        const int offset = op.context.level_basis(op.level(out)).first - op.context.level_basis(op.level(a)).first;
        return op.issue([&] { narrow::copy_limbs(op.stream(), op.n(), op.n32(o), op.n32(x), offset); });
      }
      op.issue([&] { kernels::copy_limbs(op.launch, o, x); });
    });
  }

  void mod_raise(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    guarded("mod_raise", [&] {
      Op op(*this, bc, "mod_raise");
      if (op.narrow) {  // level 0 of several primes, lifted by Garner's algorithm
        const narrow::LevelZero& zero = op.narrow->level_zero();
        op.require_shape(a, out.components, zero.count, "input");
        if (zero.modulus == 0) throw BackendError("cuda mod_raise: level 0's modulus is 2^63 or more, expected less");
        const narrow::Poly o = op.n32(op.out(out)), x = op.n32(op.in(a));
        const narrow::Prime* primes = op.primes(out);
        return op.issue([&] { narrow::mod_raise(op.stream(), op.n(), primes, zero, o, x); });
      }
      op.require_shape(a, out.components, 1, "input");
      const kernels::Poly o = op.out(out), x = op.in(a);
      op.issue([&] { kernels::mod_raise(op.launch, o, x); });
    });
  }

  void relinearize(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const KeyArg& key) override {
    guarded("relinearize", [&] {
      Op op(*this, bc, "relinearize");
      op.require_shape(a, 3, a.limbs, "input");
      op.require_shape(out, 2, a.limbs, "output");
      const kernels::Poly in = op.in(a);
      const kernels::Poly o = op.out(out);
      if (op.narrow) {  // c2 switched, added to (c0, c1)
        const narrow::Poly x = op.n32(in), y = op.n32(o);
        const std::size_t poly = static_cast<std::size_t>(x.limbs) * op.n();
        return key_switch_narrow(op, x.limbs, x.data + 2 * poly, 0, op.key32(key),
                                 {y.data, x.data, y.data + poly, x.data + poly});
      }
      const KeySwitchView& ks = op.key_switch(a.limbs - 1);
      const u64* k = op.key(key);
      op.uses_key_switch_work();
      const std::size_t limb = op.launch.n;
      const std::size_t poly = static_cast<std::size_t>(in.limbs) * limb;
      const u64* c2 = in.data + 2 * poly;
      op.issue([&] {
        issue_as_graph(op, a.limbs, 0, [&] {
          kernels::key_switch(op.launch, ks, op.work(), c2, 0, k, {o.data, in.data, 0, o.data + poly, in.data + poly},
                              runtime_->side(op.lane));
        });
      });
    });
  }

  // Where the context fuses it (CudaContext::fuses_rescale), the product in
  // a temporary, then one key switch whose ModDown takes the rescale: with
  // 64-bit words an inverse NTT of the dropped limb and one forward NTT of
  // the kept limbs instead of three transforms (32-bit words:
  // multiply_relinearize_rescale_narrow). Where
  // multiply_relinearize never stores a1 b1 (fuses_multiply), the temporary
  // holds the product's linear part only, as there. Shapes are checked
  // before any kernel reads an operand.
  void multiply_relinearize_rescale(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                    const KeyArg& key) override {
    const auto* prepared = dynamic_cast<const CudaContext*>(&bc);  // a foreign one fails in Op, inside guarded
    if (!prepared || !prepared->fuses_rescale(a.limbs)) {
      return Backend::multiply_relinearize_rescale(bc, out, a, b, key);
    }
    guarded("multiply_relinearize_rescale",
            [&] { check_product_operands(bc.context(), "cuda multiply_relinearize_rescale", out, a, b, true); });
    if (prepared->narrow()) return multiply_relinearize_rescale_narrow(bc, out, a, b, key);
    const bool fused_product = prepared->fuses_multiply();
    const int components = fused_product ? 2 : 3;
    const std::shared_ptr<Buffer> product =
        allocate(static_cast<std::size_t>(components) * a.limbs * bc.context().ring_degree() * sizeof(u64));
    const PolyArg stored{product.get(), components, a.limbs};
    guarded("multiply_relinearize_rescale", [&] {
      Op op(*this, bc, "multiply_relinearize_rescale");
      const kernels::Poly pa = op.in(a);
      const kernels::Poly pb = op.in(b);
      const kernels::Poly product_part = op.out(stored);
      const kernels::Poly o = op.out(out);
      const KeySwitchView& ks = op.key_switch(a.limbs - 1);
      const u64* k = op.key(key);
      op.uses_key_switch_work();
      const std::size_t poly = static_cast<std::size_t>(a.limbs) * op.launch.n;
      const std::size_t rescaled = static_cast<std::size_t>(o.limbs) * op.launch.n;
      const kernels::Tensor a1_b1{pa.data + poly, pb.data + poly};
      op.issue([&] {
        const kernels::RescaleAfter rescale{op.ctx.rescale(o.limbs), op.ctx.rescale_temp(op.lane)};
        issue_as_graph(op, a.limbs, 0, [&] {
          if (fused_product) {
            kernels::multiply_linear(op.launch, product_part, pa, pb);
          } else {
            kernels::multiply(op.launch, product_part, pa, pb);
          }
          kernels::key_switch(op.launch, ks, op.work(), fused_product ? nullptr : product_part.data + 2 * poly, 0, k,
                              {o.data, product_part.data, 0, o.data + rescaled, product_part.data + poly},
                              runtime_->side(op.lane), fused_product ? &a1_b1 : nullptr, &rescale);
        });
      });
    });
  }

  // 32-bit words: the product's three components in a temporary, then the
  // key switch of the third whose ModDown takes the rescale
  // (narrow::mod_down_rescale).
  void multiply_relinearize_rescale_narrow(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                                           const PolyArg& b, const KeyArg& key) {
    const std::size_t poly = static_cast<std::size_t>(a.limbs) * bc.context().ring_degree();
    const std::shared_ptr<Buffer> product = allocate(3 * poly * sizeof(u32));
    const PolyArg stored{product.get(), 3, a.limbs};
    guarded("multiply_relinearize_rescale", [&] {
      Op op(*this, bc, "multiply_relinearize_rescale");
      const narrow::Poly x = op.n32(op.in(a)), y = op.n32(op.in(b));
      const narrow::Poly p = op.n32(op.out(stored));
      const narrow::Poly o = op.n32(op.out(out));
      const u32* k = op.key32(key);
      const int level = op.level(a);
      const narrow::Prime* primes = op.primes(a);
      op.uses_key_switch_work();
      op.issue([&] {
        issue_as_graph(op, a.limbs, 0, [&] {
          narrow::multiply(op.stream(), op.n(), primes, p, x, y);
          narrow::mod_up(op.site(), level, p.data + 2 * poly, 0);
          narrow::inner_product(op.site(), level, k, 0);
          narrow::mod_down_rescale(op.site(), level, o, {p.data, 2, p.limbs});
        });
      });
    });
  }

  // The 3-component product is never stored: (a0 b0, a0 b1 + a1 b0) goes
  // straight to `out`, then ModUp's first kernel computes a1 b1 as it loads
  // it (keeping a copy in the workspace for the inner product), and ModDown
  // adds the key switch's result to `out` in place. The linear part runs on
  // the main stream: on the side stream, beside ModUp, it measured 12.7 us
  // slower in a graph at 2^14 (68.4 against 55.7; docs/perf/cuda.md, v16).
  // At 2^16 the two calls run (the one call gained nothing there, v14).
  void multiply_relinearize(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                            const KeyArg& key) override {
    const auto* prepared = dynamic_cast<const CudaContext*>(&bc);  // a foreign one fails in Op, inside guarded
    if (prepared && !prepared->fuses_multiply()) return Backend::multiply_relinearize(bc, out, a, b, key);
    guarded("multiply_relinearize", [&] {
      Op op(*this, bc, "multiply_relinearize");
      op.require_shape(a, 2, a.limbs, "first operand");
      op.require_shape(b, 2, a.limbs, "second operand");
      op.require_shape(out, 2, a.limbs, "output");
      const kernels::Poly pa = op.in(a);
      const kernels::Poly pb = op.in(b);
      const kernels::Poly o = op.out(out);
      const KeySwitchView& ks = op.key_switch(pa.limbs - 1);
      const u64* k = op.key(key);
      op.uses_key_switch_work();
      const std::size_t poly = static_cast<std::size_t>(pa.limbs) * op.launch.n;
      op.issue([&] {
        issue_as_graph(op, pa.limbs, 0, [&] {
          kernels::multiply_linear(op.launch, o, pa, pb);
          const kernels::Tensor tensor{pa.data + poly, pb.data + poly};
          kernels::key_switch(op.launch, ks, op.work(), nullptr, 0, k,
                              {o.data, o.data, 0, o.data + poly, o.data + poly}, runtime_->side(op.lane), &tensor);
        });
      });
    });
  }

  void rotate(const BackendContext& bc, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    guarded("rotate", [&] {
      Op op(*this, bc, "rotate");
      op.require_shape(a, 2, a.limbs, "input");
      op.require_shape(out, 2, a.limbs, "output");
      const kernels::Poly in = op.in(a);
      const kernels::Poly o = op.out(out);
      op.require_galois(galois_element);
      if (op.narrow) {  // g(c1) switched, added to g(c0)
        const narrow::Poly x = op.n32(in), y = op.n32(o);
        const std::size_t poly = static_cast<std::size_t>(x.limbs) * op.n();
        return key_switch_narrow(op, x.limbs, x.data + poly, galois_element, op.key32(key),
                                 {y.data, x.data, y.data + poly, nullptr});
      }
      const KeySwitchView& ks = op.key_switch(a.limbs - 1);
      const u64* k = op.key(key);
      op.uses_key_switch_work();
      const std::size_t poly = static_cast<std::size_t>(in.limbs) * op.launch.n;
      // g(c1) is never materialised: ModUp and the inner product read c1 through
      // the permutation, ModDown adds c0 through it.
      const u64* c1 = in.data + poly;
      op.issue([&] {
        issue_as_graph(op, a.limbs, 0, [&] {
          kernels::key_switch(op.launch, ks, op.work(), c1, galois_element, k,
                              {o.data, in.data, galois_element, o.data + poly, nullptr}, runtime_->side(op.lane));
        });
      });
    });
  }

  void rotate_hoisted(const BackendContext& bc, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    guarded("rotate_hoisted", [&] {
      Op op(*this, bc, "rotate_hoisted");
      if (outs.size() != galois_elements.size() || outs.size() != keys.size()) {
        throw BackendError("cuda rotate_hoisted: " + std::to_string(outs.size()) + " outputs, " +
                           std::to_string(galois_elements.size()) + " Galois elements and " +
                           std::to_string(keys.size()) + " keys, expected equal counts");
      }
      op.require_shape(a, 2, a.limbs, "input");
      const kernels::Poly in = op.in(a);
      if (op.narrow) return rotate_hoisted_narrow(op, outs, in, galois_elements, keys);
      const KeySwitchView& ks = op.key_switch(a.limbs - 1);
      op.uses_key_switch_work();
      std::vector<kernels::Poly> o;
      std::vector<const u64*> k;
      for (std::size_t r = 0; r < outs.size(); ++r) {
        op.require_shape(outs[r], 2, a.limbs, "output");
        o.push_back(op.out(outs[r]));
        k.push_back(op.key(keys[r]));
        op.require_galois(galois_elements[r]);
      }
      const std::size_t poly = static_cast<std::size_t>(in.limbs) * op.launch.n;
      const u64* c1 = in.data + poly;
      auto output = [&](std::size_t r) -> kernels::KeySwitchOutput {
        return {o[r].data, in.data, galois_elements[r], o[r].data + poly, nullptr};
      };
      // The rotations' inner products and ModDowns (latency-bound launches
      // of a few hundred blocks at 2^14) run side by side on the runtime's
      // branches, each with its own accumulators, where the level's key
      // switch is small enough (CudaContext::hoisted_on_branches) and no two
      // outputs overlap (one after the other, the later rotation's output
      // would win; side by side they would race).
      const auto branch_count = static_cast<std::size_t>(DeviceRuntime::branches);
      const std::size_t used = op.ctx.hoisted_on_branches(ks) ? std::min(outs.size(), branch_count) : 0;
      const bool side_by_side = used > 1 && outputs_apart(o, 2 * poly);
      // Side by side or not is another graph topology: another shape.
      op.issue([&] {
        issue_as_graph(op, a.limbs, static_cast<int>(outs.size()) * (side_by_side ? -1 : 1), [&] {
          kernels::mod_up(op.launch, ks, op.work(), c1);
          if (!side_by_side) {
            for (std::size_t r = 0; r < outs.size(); ++r) {
              kernels::rotate_extended(op.launch, ks, op.work(), c1, galois_elements[r], k[r], output(r),
                                       &runtime_->side(op.lane));
            }
            return;
          }
          const std::vector<kernels::KeySwitchWork>& branches = op.ctx.branch_work(op.lane);
          auto branch = [&](std::size_t b) -> const kernels::SideStream& {
            return runtime_->branch(op.lane, static_cast<int>(b));
          };
          for (std::size_t b = 0; b < used; ++b) branch(b).fork(op.launch.stream);
          for (std::size_t r = 0; r < outs.size(); ++r) {
            const std::size_t b = r % used;
            kernels::rotate_extended(op.launch.on(branch(b).stream), ks, branches[b], c1, galois_elements[r], k[r],
                                     output(r), nullptr);
          }
          for (std::size_t b = 0; b < used; ++b) branch(b).join(op.launch.stream);
        });
      });
    });
  }

 private:
  // Where a key switch's result goes: out_c = ModDown(accumulator_c) + add_c
  // (add_0 read through the rotation's automorphism; add_c may be null).
  struct NarrowOutputs {
    u32* out0;
    const u32* add0;
    u32* out1;
    const u32* add1;
  };

  // A key switch in 32-bit words: ModUp of d (of d(X^g) for a Galois element
  // g, else 0), the inner product with the key, ModDown into `outputs`.
  template <class Op>
  void key_switch_narrow(Op& op, int limbs, const u32* d, u32 galois_element, const u32* key,
                         const NarrowOutputs& outputs) {
    const int level = op.level_of_limbs(limbs);
    op.uses_key_switch_work();
    op.issue([&] {
      issue_as_graph(op, limbs, 0, [&] {
        narrow::mod_up(op.site(), level, d, galois_element);
        narrow::inner_product(op.site(), level, key, 0);
        narrow::mod_down(op.site(), level, outputs.out0, outputs.add0, galois_element, outputs.out1, outputs.add1);
      });
    });
  }

  // rotate_hoisted in 32-bit words: one ModUp, then each rotation's inner
  // product (the extended limbs read through its automorphism) and ModDown.
  template <class Op>
  void rotate_hoisted_narrow(Op& op, std::span<const PolyArg> outs, const kernels::Poly& in,
                             std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) {
    const int level = op.level_of_limbs(in.limbs);
    op.uses_key_switch_work();
    std::vector<narrow::Poly> o;
    std::vector<const u32*> k;
    for (std::size_t r = 0; r < outs.size(); ++r) {
      op.require_shape(outs[r], 2, in.limbs, "output");
      o.push_back(op.n32(op.out(outs[r])));
      k.push_back(op.key32(keys[r]));
      op.require_galois(galois_elements[r]);
    }
    const narrow::Poly x = op.n32(in);
    const std::size_t poly = static_cast<std::size_t>(x.limbs) * op.n();
    op.issue([&] {
      issue_as_graph(op, in.limbs, static_cast<int>(outs.size()), [&] {
        narrow::mod_up(op.site(), level, x.data + poly, 0);
        for (std::size_t r = 0; r < outs.size(); ++r) {
          narrow::inner_product(op.site(), level, k[r], galois_elements[r]);
          narrow::mod_down(op.site(), level, o[r].data, x.data, galois_elements[r], o[r].data + poly, nullptr);
        }
      });
    });
  }

  // Whether no two outputs (`words` words from each data pointer) overlap.
  static bool outputs_apart(const std::vector<kernels::Poly>& outs, std::size_t words) {
    auto apart = [words](const u64* x, const u64* y) { return x + words <= y || y + words <= x; };
    for (std::size_t i = 0; i < outs.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (!apart(outs[i].data, outs[j].data)) return false;
      }
    }
    return true;
  }

  // Issues an operation's kernels (`issue`, launching on op.launch.stream)
  // through the executable graph kept for its shape (EagerGraphs: during
  // issue, op.launch.stream is its capture stream), or directly while the
  // stream is being captured (they are then part of that capture).
  template <class Op, class F>
  void issue_as_graph(Op& op, int limbs, int count, F&& issue) {
    if (runtime_->stream_capturing()) {
      issue();
      return;
    }
    const cudaStream_t stream = op.launch.stream;
    try {
      eager_graphs_.run(stream, {op.what, &op.ctx, limbs, count}, [&](cudaStream_t capture) {
        op.launch.stream = capture;
        issue();
      });
    } catch (...) {
      op.launch.stream = stream;
      throw;
    }
    op.launch.stream = stream;
  }

  // Runs `issue`; when it throws during a capture, the capture is ended and
  // its partial graph discarded, and end_capture reports why.
  template <class F>
  void guarded(const char* what, F&& issue) {
    try {
      issue();
    } catch (const std::exception& e) {
      // Under the lock: no other thread is between placing an operation on
      // a lane and its last launch when the capture ends.
      std::lock_guard lock(mutex_);
      if (runtime_->abort_capture()) abandoned_ = std::string(what) + " failed during the capture: " + e.what();
      throw;
    }
  }

  cudaStream_t stream_of(Stream* stream, const char* what) const {
    if (!stream) return runtime_->stream();
    const auto* cuda = dynamic_cast<const CudaStream*>(stream);
    if (!cuda) {
      throw InvalidArgumentError(std::string("cuda ") + what +
                                 ": the stream was not created by a CUDA backend (create_stream)");
    }
    if (cuda->runtime().device() != runtime_->device()) {
      throw InvalidArgumentError(std::string("cuda ") + what + ": the stream belongs to device " +
                                 std::to_string(cuda->runtime().device()) + ", this backend to device " +
                                 std::to_string(runtime_->device()));
    }
    return cuda->get();
  }

  static cudaEvent_t event_of(const Event& event, const char* what) {
    const auto* cuda = dynamic_cast<const CudaEvent*>(&event);
    if (!cuda) {
      throw InvalidArgumentError(std::string("cuda ") + what +
                                 ": the event was not created by a CUDA backend (create_event)");
    }
    return cuda->get();
  }

  // A buffer of a CUDA backend on `device_index` (another device's is refused:
  // values and keys are bound to their device; a collective moves them).
  static const DeviceBuffer& device_buffer(const Buffer& buffer, std::size_t bytes, const char* what,
                                           int device_index) {
    const auto* device = dynamic_cast<const DeviceBuffer*>(&buffer);
    if (!device) throw BackendError(std::string("cuda ") + what + ": the buffer does not belong to a CUDA backend");
    if (device->runtime().device() != device_index) {
      throw BackendError(std::string("cuda ") + what + ": the buffer is on device " +
                         std::to_string(device->runtime().device()) + ", this backend on device " +
                         std::to_string(device_index) + " (move values between devices with a collective)");
    }
    if (bytes > device->size_bytes()) {
      throw BackendError(std::string("cuda ") + what + " of " + std::to_string(bytes) + " bytes into a buffer of " +
                         std::to_string(device->size_bytes()) + " bytes");
    }
    return *device;
  }

  // One operation: the lock, the device, the context and checked views of the arguments.
  struct Op {
    Op(CudaBackend& backend, const BackendContext& bc, const char* name)
        : lock(backend.mutex_),
          ctx(context_of(bc, name)),
          context(ctx.context()),
          narrow(ctx.narrow()),
          word_bytes(stored_word_bytes(context.word_size())),
          launch(ctx.launch()),
          what(name) {
      if (ctx.runtime() != backend.runtime_) {
        throw BackendError(std::string("cuda ") + name + ": the context was prepared by another CUDA backend");
      }
      ctx.runtime()->activate();
      // The graph refers to the context's tables and workspace: keep them.
      if (backend.runtime_->capturing()) backend.runtime_->retain_during_capture(ctx.shared_from_this());
    }

    static const CudaContext& context_of(const BackendContext& bc, const char* name) {
      const auto* c = dynamic_cast<const CudaContext*>(&bc);
      if (!c) throw BackendError(std::string("cuda ") + name + ": the context was not prepared by a CUDA backend");
      return *c;
    }

    // The operation's inputs and outputs, declared before issue(): during a
    // capture they decide which earlier operations it waits for.
    kernels::Poly in(const PolyArg& p) { return poly(p, false); }
    kernels::Poly out(const PolyArg& p) { return poly(p, true); }
    // A key switch (heavy: during a capture it takes a key-switching lane,
    // whose workspace it uses, and operations that do not need it are kept
    // off the lanes it ends).
    void uses_key_switch_work() { heavy = true; }
    // Runs `launches` (kernels on launch.stream) on the stream the device
    // runtime gives for the declared accesses (a capture lane, or its stream).
    template <class F>
    void issue(F&& launches) {
      const LaneStream placed = ctx.runtime()->stream_for(accesses, heavy);
      launch.stream = placed.stream;
      lane = placed.lane;
      launches();
      ctx.runtime()->operation_issued();
    }
    // The key-switching workspace of the operation's lane (inside issue()).
    const kernels::KeySwitchWork& work() const { return ctx.work(lane); }

    kernels::Poly poly(const PolyArg& p, bool write) {
      if (!p.buffer) throw BackendError(std::string("cuda ") + what + ": null buffer");
      if (p.components < 1 || p.components > 3 || p.limbs < 1 || p.limbs > context.key_limbs()) {
        throw BackendError(std::string("cuda ") + what + ": polynomial of " + std::to_string(p.components) +
                           " components and " + std::to_string(p.limbs) + " limbs is out of range");
      }
      const std::size_t bytes = static_cast<std::size_t>(p.components) * static_cast<std::size_t>(p.limbs) *
                                context.ring_degree() * word_bytes;
      u64* data = device_buffer(*p.buffer, bytes, what, ctx.runtime()->device()).data();
      accesses.push_back(access_of(data, bytes, write));
      return {data, p.components, p.limbs};
    }

    const u64* key(const KeyArg& k) {
      if (!k.buffer) throw BackendError(std::string("cuda ") + what + ": null key");
      const std::size_t bytes = context.key_words() * word_bytes;
      const u64* data = device_buffer(*k.buffer, bytes, what, ctx.runtime()->device()).data();
      accesses.push_back(access_of(data, bytes, false));
      return data;
    }

    // A key switch's polynomial: `components` components of `limbs` limbs.
    void require_shape(const PolyArg& p, int components, int limbs, const char* role) const {
      if (p.components != components || p.limbs != limbs) {
        throw BackendError(std::string("cuda ") + what + ": " + role + " of " + std::to_string(p.components) +
                           " components and " + std::to_string(p.limbs) + " limbs, expected " +
                           std::to_string(components) + " components of " + std::to_string(limbs) + " limbs");
      }
    }

    const KeySwitchView& key_switch(int level) const {
      if (level < 0 || level > context.max_level()) {
        throw BackendError(std::string("cuda ") + what + ": level " + std::to_string(level) + " is out of range");
      }
      return ctx.key_switch(level);
    }

    // The 32-bit word family (narrow): its views, the level of a Q-basis
    // array, and its limbs' primes.
    static narrow::Poly n32(const kernels::Poly& p) { return {reinterpret_cast<u32*>(p.data), p.components, p.limbs}; }
    const u32* key32(const KeyArg& k) { return reinterpret_cast<const u32*>(key(k)); }
    cudaStream_t stream() const { return launch.stream; }
    u32 n() const { return launch.n; }
    narrow::Site site() const { return {*narrow, launch.stream, launch.n, heavy ? &narrow->workspace(lane) : nullptr}; }
    int level_of_limbs(int limbs) const {
      const int level = context.level_of_limbs(limbs);
      if (level < 0) {
        throw BackendError(std::string("cuda ") + what + ": no level of context " + std::to_string(context.id()) +
                           " has " + std::to_string(limbs) + " limbs");
      }
      return level;
    }
    int level(const PolyArg& p) const { return level_of_limbs(p.limbs); }
    const narrow::Prime* primes(const PolyArg& p) const { return narrow->primes() + narrow->first(level(p)); }
    // One residue per limb of p, with Shoup's constants modulo its primes.
    narrow::LimbConstants limb_constants(const PolyArg& p, std::span<const std::uint64_t> residues) const {
      return narrow::limb_constants(context, level(p), residues.first(static_cast<std::size_t>(p.limbs)));
    }

    void require_residues(std::span<const std::uint64_t> residues, int limbs) const {
      if (residues.size() < static_cast<std::size_t>(limbs)) {
        throw BackendError(std::string("cuda ") + what + ": " + std::to_string(residues.size()) +
                           " constant residues for " + std::to_string(limbs) + " limbs");
      }
    }

    void require_galois(std::uint32_t g) const {
      if ((g & 1) == 0 || g >= 2 * context.ring_degree()) {
        throw BackendError(std::string("cuda ") + what + ": Galois element " + std::to_string(g) +
                           " is not an odd number below 2N");
      }
    }

    std::lock_guard<std::mutex> lock;
    const CudaContext& ctx;
    const Context& context;
    const narrow::Tables* narrow;  // the 32-bit word family's tables, or null
    std::size_t word_bytes;
    kernels::Launch launch;  // its stream is the operation's only from issue() on (a lane, during a capture)
    const char* what;
    std::vector<MemoryAccess> accesses;
    bool heavy = false;
    int lane = 0;  // the capture lane issue() placed it on (0 outside a capture)
  };

  std::shared_ptr<DeviceRuntime> runtime_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::weak_ptr<CudaContext>> contexts_;
  std::string abandoned_;     // why the last capture was discarded (reported by end_capture)
  EagerGraphs eager_graphs_;  // destroyed before runtime_ (declared after it)
};

}  // namespace

bool device_available() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

std::shared_ptr<Backend> make_cuda_backend(CudaBackendOptions options) {
  return std::make_shared<CudaBackend>(options);
}

std::string device_description(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) throw BackendError("device_description: backend '" + backend.name() + "' is not a CUDA backend");
  const int device = cuda->device();
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return "cuda: device " + std::to_string(device) + ", " + p.name + ", " + std::to_string(p.totalGlobalMem >> 20) +
         " MiB, " + std::to_string(p.multiProcessorCount) + " SMs, compute capability " + std::to_string(p.major) +
         "." + std::to_string(p.minor) + ", " + nccl_status();
}

std::size_t graph_root_count(const Recording& recording) {
  const auto* cuda = dynamic_cast<const CudaRecording*>(&recording);
  if (!cuda) throw BackendError("graph_root_count: the recording was not made by a CUDA backend");
  return cuda->root_count();
}

void* native_stream(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) throw BackendError("native_stream: backend '" + backend.name() + "' is not a CUDA backend");
  return cuda->stream();
}

}  // namespace fhelium::cuda
