#include "plugin_backend.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "fhelium/error.hpp"

namespace fhelium::plugins {
namespace {

// One backend instance. Buffers and contexts hold it (and through it the
// library) so the plugin stays loaded, and its handle alive, while they live.
struct Instance {
  std::shared_ptr<PluginLibrary> library;
  FheliumBackend* handle = nullptr;
  const FheliumStreamsExtension* streams = nullptr;          // NULL: a plugin without the ABI 1.1 extension
  const FheliumCollectivesExtension* collectives = nullptr;  // NULL: none (ABI 1.7), host staging

  const FheliumBackendApi& api() const { return *library->api; }
  ~Instance() {
    if (handle != nullptr) api().backend_destroy(handle);
  }

  // Turns an error object into the matching exception (and frees it).
  void check(FheliumError* error, const char* what) const {
    if (error == nullptr) return;
    const std::string message =
        std::string(library->api->name) + " backend: " + what + ": " + api().error_message(error);
    const int32_t code = api().error_code(error);
    api().error_destroy(error);
    switch (code) {
      case FHELIUM_ERROR_INVALID_ARGUMENT:
        throw InvalidArgumentError(message);
      case FHELIUM_ERROR_STATE:
        throw StateError(message);
      default:
        throw BackendError(message);
    }
  }
};

class PluginBuffer final : public Buffer {
 public:
  PluginBuffer(std::shared_ptr<Instance> instance, FheliumBuffer* handle, std::size_t bytes)
      : instance_(std::move(instance)), handle_(handle), bytes_(bytes) {}
  ~PluginBuffer() override { instance_->api().buffer_destroy(handle_); }
  PluginBuffer(const PluginBuffer&) = delete;
  PluginBuffer& operator=(const PluginBuffer&) = delete;
  std::size_t size_bytes() const override { return bytes_; }
  FheliumBuffer* handle() const { return handle_; }

 private:
  std::shared_ptr<Instance> instance_;
  FheliumBuffer* handle_;
  std::size_t bytes_;
};

class PluginContext final : public BackendContext {
 public:
  PluginContext(std::shared_ptr<Instance> instance, std::shared_ptr<const Context> context, FheliumContext* handle)
      : instance_(std::move(instance)), context_(std::move(context)), handle_(handle) {}
  ~PluginContext() override { instance_->api().context_destroy(handle_); }
  PluginContext(const PluginContext&) = delete;
  PluginContext& operator=(const PluginContext&) = delete;
  const Context& context() const override { return *context_; }
  FheliumContext* handle() const { return handle_; }

 private:
  std::shared_ptr<Instance> instance_;
  std::shared_ptr<const Context> context_;
  FheliumContext* handle_;
};

// A stream, event or recording of a plugin backend; destroys its handle
// inside the plugin, which it keeps loaded (through the instance).
class PluginStream final : public Stream {
 public:
  PluginStream(std::shared_ptr<Instance> instance, FheliumStream* handle)
      : instance_(std::move(instance)), handle_(handle) {}
  ~PluginStream() override { instance_->streams->stream_destroy(handle_); }
  PluginStream(const PluginStream&) = delete;
  PluginStream& operator=(const PluginStream&) = delete;
  const Instance* instance() const { return instance_.get(); }
  FheliumStream* handle() const { return handle_; }

 private:
  std::shared_ptr<Instance> instance_;
  FheliumStream* handle_;
};

class PluginEvent final : public Event {
 public:
  PluginEvent(std::shared_ptr<Instance> instance, FheliumEvent* handle)
      : instance_(std::move(instance)), handle_(handle) {}
  ~PluginEvent() override { instance_->streams->event_destroy(handle_); }
  PluginEvent(const PluginEvent&) = delete;
  PluginEvent& operator=(const PluginEvent&) = delete;
  const Instance* instance() const { return instance_.get(); }
  FheliumEvent* handle() const { return handle_; }

 private:
  std::shared_ptr<Instance> instance_;
  FheliumEvent* handle_;
};

FheliumAsyncArgs async_args(const Instance& instance) {
  FheliumAsyncArgs args{};
  args.struct_size = sizeof(args);
  args.backend = instance.handle;
  return args;
}

using AsyncFn = FheliumError* (*)(FheliumAsyncArgs*);

void call_async(const Instance& instance, AsyncFn fn, const char* what, FheliumAsyncArgs& args) {
  if (fn == nullptr) throw BackendError(std::string(instance.api().name) + " backend does not implement " + what);
  instance.check(fn(&args), what);
}

class PluginRecording final : public Recording {
 public:
  PluginRecording(std::shared_ptr<Instance> instance, FheliumRecording* handle)
      : instance_(std::move(instance)), handle_(handle) {}
  ~PluginRecording() override { instance_->streams->recording_destroy(handle_); }
  PluginRecording(const PluginRecording&) = delete;
  PluginRecording& operator=(const PluginRecording&) = delete;

  void launch() override {
    FheliumAsyncArgs args = async_args(*instance_);
    args.recording = handle_;
    call_async(*instance_, instance_->streams->recording_launch, "recording_launch", args);
  }
  std::size_t memory_bytes() const override { return info()[0]; }
  std::size_t operation_count() const override { return info()[1]; }

 private:
  std::array<std::uint64_t, 2> info() const {
    FheliumAsyncArgs args = async_args(*instance_);
    args.recording = handle_;
    call_async(*instance_, instance_->streams->recording_info, "recording_info", args);
    return {args.values[0], args.values[1]};
  }

  std::shared_ptr<Instance> instance_;
  FheliumRecording* handle_;
};

// Wraps a handle the plugin returned, destroying it if the wrapper cannot be made.
template <class Wrapper, class Handle>
std::shared_ptr<Wrapper> adopt(const std::shared_ptr<Instance>& instance, Handle* handle, void (*destroy)(Handle*)) {
  if (handle == nullptr) throw BackendError(std::string(instance->api().name) + " backend returned no handle");
  try {
    return std::make_shared<Wrapper>(instance, handle);
  } catch (...) {
    destroy(handle);
    throw;
  }
}

FheliumBuffer* handle_of(const Buffer* buffer) {
  const auto* b = dynamic_cast<const PluginBuffer*>(buffer);
  if (b == nullptr) throw InvalidArgumentError("a buffer that does not belong to this plugin backend was passed to it");
  return b->handle();
}

FheliumPoly poly(const PolyArg& p) { return {handle_of(p.buffer), p.components, p.limbs}; }
FheliumKey key(const KeyArg& k) { return {handle_of(k.buffer), k.digits}; }

FheliumCollectiveArgs collective_args(const Instance& instance) {
  FheliumCollectiveArgs args{};
  args.struct_size = sizeof(args);
  args.backend = instance.handle;
  return args;
}

class PluginCommunicator final : public DeviceCommunicator {
 public:
  PluginCommunicator(std::shared_ptr<Instance> instance, FheliumCommunicator* handle)
      : instance_(std::move(instance)), handle_(handle) {}
  ~PluginCommunicator() override { instance_->collectives->communicator_destroy(handle_); }
  PluginCommunicator(const PluginCommunicator&) = delete;
  PluginCommunicator& operator=(const PluginCommunicator&) = delete;

  void broadcast(Buffer& buffer, std::size_t bytes, int root) override {
    FheliumCollectiveArgs args = with_handle();
    args.buffer = handle_of(&buffer);
    args.bytes = bytes;
    args.root = root;
    instance_->check(instance_->collectives->broadcast(&args), "broadcast");
  }
  void group_begin() override {
    FheliumCollectiveArgs args = with_handle();
    instance_->check(instance_->collectives->group_begin(&args), "group_begin");
  }
  void group_end() override {
    FheliumCollectiveArgs args = with_handle();
    instance_->check(instance_->collectives->group_end(&args), "group_end");
  }

 private:
  FheliumCollectiveArgs with_handle() const {
    FheliumCollectiveArgs args = collective_args(*instance_);
    args.communicator = handle_;
    return args;
  }
  std::shared_ptr<Instance> instance_;
  FheliumCommunicator* handle_;
};

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Instance> instance)
      : instance_(std::move(instance)), rotate_sum_(probe_rotate_sum(*instance_)) {}

  std::string name() const override { return instance_->api().name; }
  Instance& instance() const { return *instance_; }

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    if (context->word_size() == WordSize::bits32 && instance_->api().abi_minor < 6) {
      throw BackendError("backend '" + name() + "': its plugin (" + instance_->library->path + ", ABI " +
                         std::to_string(instance_->api().abi_major) + "." + std::to_string(instance_->api().abi_minor) +
                         ") predates 4-byte residues (ABI 1.6) and cannot take the 32-bit context " +
                         std::to_string(context->id()));
    }
    const bool level_zero_only = context->word_size() == WordSize::bits32 && context->q_count() == 2;
    if ((context->params().wide_levels != 0 || level_zero_only) && instance_->api().abi_minor < 8) {
      throw BackendError("backend '" + name() + "': its plugin (" + instance_->library->path + ", ABI " +
                         std::to_string(instance_->api().abi_major) + "." + std::to_string(instance_->api().abi_minor) +
                         ") predates wide levels and level-0-only chains (ABI 1.8) and cannot take context " +
                         std::to_string(context->id()) + " (" + std::to_string(context->params().wide_levels) +
                         " wide levels, " + std::to_string(context->q_count()) + " q primes)");
    }
    std::vector<u64> q, p;
    for (const auto& m : context->q()) q.push_back(m.value);
    for (const auto& m : context->p()) p.push_back(m.value);
    FheliumContextArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance_->handle;
    args.log_ring_degree = context->params().log_ring_degree;
    args.word_bits = static_cast<int32_t>(context->word_size());
    args.q_primes = q.data();
    args.q_count = static_cast<int32_t>(q.size());
    args.p_primes = p.data();
    args.p_count = static_cast<int32_t>(p.size());
    args.scale = context->params().scale;
    args.wide_levels = context->params().wide_levels;
    instance_->check(instance_->api().context_create(&args), "context_create");
    return std::make_shared<PluginContext>(instance_, std::move(context), args.context);
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    FheliumBufferArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance_->handle;
    args.bytes = bytes;
    instance_->check(instance_->api().buffer_create(&args), "buffer_create");
    return std::make_shared<PluginBuffer>(instance_, args.buffer, bytes);
  }

  void upload(Buffer& dst, const void* src, std::size_t bytes) override {
    FheliumTransferArgs args = transfer(&dst, const_cast<void*>(src), bytes);
    instance_->check(instance_->api().upload(&args), "upload");
  }
  void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has = api.struct_size >= offsetof(FheliumBackendApi, upload_filled) + sizeof(api.upload_filled);
    if (!has || api.upload_filled == nullptr) return Backend::upload_filled(dst, bytes, fill);
    // The fill's exception cannot cross the C boundary: it waits here and is
    // rethrown as it was (a loader's FormatError stays one).
    struct Filler {
      const ChunkFill* fill;
      std::exception_ptr failure;
    } filler{&fill, nullptr};
    FheliumFilledUploadArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance_->handle;
    args.buffer = handle_of(&dst);
    args.bytes = bytes;
    args.fill = [](void* user, void* chunk, std::size_t offset, std::size_t length) -> std::int32_t {
      auto* f = static_cast<Filler*>(user);
      try {
        (*f->fill)(std::span(static_cast<std::byte*>(chunk), length), offset);
        return 0;
      } catch (...) {
        f->failure = std::current_exception();
        return 1;
      }
    };
    args.fill_user = &filler;
    FheliumError* error = api.upload_filled(&args);
    if (filler.failure) {
      if (error != nullptr) api.error_destroy(error);
      std::rethrow_exception(filler.failure);
    }
    instance_->check(error, "upload_filled");
  }
  void download(const Buffer& src, void* dst, std::size_t bytes) override {
    FheliumTransferArgs args = transfer(&src, dst, bytes);
    instance_->check(instance_->api().download(&args), "download");
  }
  void synchronize() override { instance_->check(instance_->api().synchronize(instance_->handle), "synchronize"); }

  // Streams, events, copies, memory usage and capture go through the STREAMS
  // extension (ABI 1.1); a plugin without it gets the Backend defaults.
  std::shared_ptr<Stream> create_stream() override {
    if (streams() == nullptr) return Backend::create_stream();
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->stream_create, "stream_create", args);
    return adopt<PluginStream>(instance_, args.stream_out, streams()->stream_destroy);
  }
  std::shared_ptr<Event> create_event() override {
    if (streams() == nullptr) return Backend::create_event();
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->event_create, "event_create", args);
    return adopt<PluginEvent>(instance_, args.event_out, streams()->event_destroy);
  }
  // A plugin older than ABI 1.5 gets the host-clock timing events of the
  // Backend defaults (recorded after a synchronize); the event calls below
  // take them through the defaults too.
  std::shared_ptr<Event> create_timing_event() override {
    if (timing() == nullptr) return Backend::create_timing_event();
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, timing()->event_create_timing, "event_create_timing", args);
    return adopt<PluginEvent>(instance_, args.event_out, streams()->event_destroy);
  }
  double elapsed_seconds(const Event& start, const Event& end) override {
    if (timing() == nullptr) return Backend::elapsed_seconds(start, end);
    FheliumAsyncArgs args = async_args(*instance_);
    args.event = event_handle(start);
    args.end_event = event_handle(end);
    call_async(*instance_, timing()->event_elapsed, "event_elapsed", args);
    return static_cast<double>(args.values[0]) * 1e-9;
  }
  void record_event(Event& event, Stream* stream) override {
    if (streams() == nullptr || dynamic_cast<HostClockEvent*>(&event) != nullptr) {
      return Backend::record_event(event, stream);
    }
    FheliumAsyncArgs args = async_args(*instance_);
    args.event = event_handle(event);
    args.stream = stream_handle(stream);
    call_async(*instance_, streams()->event_record, "record_event", args);
  }
  void wait_event(Stream* stream, const Event& event) override {
    if (streams() == nullptr || dynamic_cast<const HostClockEvent*>(&event) != nullptr) {
      return Backend::wait_event(stream, event);
    }
    FheliumAsyncArgs args = async_args(*instance_);
    args.stream = stream_handle(stream);
    args.event = event_handle(event);
    call_async(*instance_, streams()->stream_wait_event, "wait_event", args);
  }
  void synchronize_event(const Event& event) override {
    if (streams() == nullptr || dynamic_cast<const HostClockEvent*>(&event) != nullptr) {
      return Backend::synchronize_event(event);
    }
    FheliumAsyncArgs args = async_args(*instance_);
    args.event = event_handle(event);
    call_async(*instance_, streams()->event_synchronize, "synchronize_event", args);
  }
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream) override {
    if (streams() == nullptr) return Backend::copy(dst, src, bytes, stream);
    FheliumAsyncArgs args = async_args(*instance_);
    args.dst = handle_of(&dst);
    args.src = handle_of(&src);
    args.bytes = bytes;
    args.stream = stream_handle(stream);
    call_async(*instance_, streams()->copy, "copy", args);
  }
  bool has_device_collectives() const override {
    if (instance_->collectives == nullptr) return false;
    FheliumCollectiveArgs args = collective_args(*instance_);
    args.query_only = 1;
    instance_->check(instance_->collectives->communicator_id(&args), "communicator_id");
    return args.available != 0;
  }
  std::optional<CommunicatorId> communicator_id() override {
    if (instance_->collectives == nullptr) return std::nullopt;
    FheliumCollectiveArgs args = collective_args(*instance_);
    instance_->check(instance_->collectives->communicator_id(&args), "communicator_id");
    if (args.available == 0) return std::nullopt;
    CommunicatorId id;
    std::copy(std::begin(args.id), std::end(args.id), id.begin());
    return id;
  }
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                        std::chrono::milliseconds timeout) override {
    if (instance_->collectives == nullptr) return Backend::join_communicator(id, ranks, rank, timeout);
    FheliumCollectiveArgs args = collective_args(*instance_);
    std::copy(id.begin(), id.end(), std::begin(args.id));
    args.ranks = ranks;
    args.rank = rank;
    args.timeout_ms = static_cast<std::uint64_t>(timeout.count());
    instance_->check(instance_->collectives->communicator_join(&args), "communicator_join");
    return std::make_unique<PluginCommunicator>(instance_, args.communicator);
  }
  MemoryUsage memory_usage() const override {
    if (streams() == nullptr) return Backend::memory_usage();
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->memory_usage, "memory_usage", args);
    return {args.values[0], args.values[1]};
  }
  bool supports_capture() const override { return streams() != nullptr && capture_state()[0] != 0; }
  bool capturing() const override { return streams() != nullptr && capture_state()[1] != 0; }
  void begin_capture() override {
    if (streams() == nullptr) {
      throw BackendError("backend '" + name() + "' cannot capture operations: its plugin (" + instance_->library->path +
                         ", ABI " + std::to_string(instance_->api().abi_major) + "." +
                         std::to_string(instance_->api().abi_minor) +
                         ") has no streams extension (ABI 1.1), so supports_capture() is false");
    }
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->capture_begin, "begin_capture", args);
  }
  std::unique_ptr<Recording> end_capture() override {
    if (streams() == nullptr) return Backend::end_capture();
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->capture_end, "end_capture", args);
    if (args.recording_out == nullptr) throw BackendError(name() + " backend: end_capture returned no recording");
    try {
      return std::make_unique<PluginRecording>(instance_, args.recording_out);
    } catch (...) {
      streams()->recording_destroy(args.recording_out);
      throw;
    }
  }

  void add(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    call(instance_->api().add, "add", op(c, out, a, &b));
  }
  void sub(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    call(instance_->api().sub, "sub", op(c, out, a, &b));
  }
  void negate(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    call(instance_->api().negate, "negate", op(c, out, a));
  }
  void add_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a, std::span<const std::uint64_t> r,
                    bool ntt_domain) override {
    FheliumOpArgs args = op(c, out, a);
    args.residues = r.data();
    args.residue_count = r.size();
    args.ntt_domain = ntt_domain ? 1 : 0;
    call(instance_->api().add_constant, "add_constant", args);
  }
  void multiply_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> r) override {
    FheliumOpArgs args = op(c, out, a);
    args.residues = r.data();
    args.residue_count = r.size();
    call(instance_->api().multiply_constant, "multiply_constant", args);
  }
  void multiply_plain(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    call(instance_->api().multiply_plain, "multiply_plain", op(c, out, a, &p));
  }
  void multiply(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    call(instance_->api().multiply, "multiply", op(c, out, a, &b));
  }
  void to_ntt(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    call(instance_->api().to_ntt, "to_ntt", op(c, out, a));
  }
  void to_coefficient(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    call(instance_->api().to_coefficient, "to_coefficient", op(c, out, a));
  }
  void rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    call(instance_->api().rescale, "rescale", op(c, out, a));
  }
  void drop_limbs(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    call(instance_->api().drop_limbs, "drop_limbs", op(c, out, a));
  }
  void relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const KeyArg& k) override {
    FheliumOpArgs args = op(c, out, a);
    args.key = key(k);
    call(instance_->api().relinearize, "relinearize", args);
  }
  void multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                            const KeyArg& k) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has =
        api.struct_size >= offsetof(FheliumBackendApi, multiply_relinearize) + sizeof(api.multiply_relinearize);
    if (!has || api.multiply_relinearize == nullptr) return Backend::multiply_relinearize(c, out, a, b, k);
    FheliumOpArgs args = op(c, out, a, &b);
    args.key = key(k);
    call(api.multiply_relinearize, "multiply_relinearize", args);
  }
  void multiply_relinearize_rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                    const KeyArg& k) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has = api.struct_size >= offsetof(FheliumBackendApi, multiply_relinearize_rescale) +
                                            sizeof(api.multiply_relinearize_rescale);
    if (!has || api.multiply_relinearize_rescale == nullptr) {
      return Backend::multiply_relinearize_rescale(c, out, a, b, k);
    }
    FheliumOpArgs args = op(c, out, a, &b);
    args.key = key(k);
    call(api.multiply_relinearize_rescale, "multiply_relinearize_rescale", args);
  }
  void sum_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                    std::span<const PolyArg> p) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has = api.struct_size >= offsetof(FheliumBackendApi, sum_products) + sizeof(api.sum_products);
    if (!has || api.sum_products == nullptr) return Backend::sum_products(c, out, a, p);
    check_sum_products(out, a, p);
    std::vector<FheliumPoly> terms, plains;
    for (const auto& x : a) terms.push_back(poly(x));
    for (const auto& x : p) plains.push_back(poly(x));
    FheliumOpArgs args = op(c, out, a[0]);
    args.terms = terms.data();
    args.plains = p.empty() ? nullptr : plains.data();
    args.term_count = terms.size();
    call(api.sum_products, "sum_products", args);
  }
  void sum_constant_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has =
        api.struct_size >= offsetof(FheliumBackendApi, sum_constant_products) + sizeof(api.sum_constant_products);
    if (!has || api.sum_constant_products == nullptr) return Backend::sum_constant_products(c, out, a, r);
    check_sum_constant_products(out, a, r);
    std::vector<FheliumPoly> terms;
    for (const auto& x : a) terms.push_back(poly(x));
    FheliumOpArgs args = op(c, out, a[0]);
    args.terms = terms.data();
    args.term_count = terms.size();
    args.residues = r.data();
    args.residue_count = r.size();
    call(api.sum_constant_products, "sum_constant_products", args);
  }
  void sum_product_groups(const BackendContext& c, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                          std::span<const PolyArg> p, std::span<const std::size_t> ends) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has =
        api.struct_size >= offsetof(FheliumBackendApi, sum_product_groups) + sizeof(api.sum_product_groups);
    if (!has || api.sum_product_groups == nullptr) return Backend::sum_product_groups(c, outs, a, p, ends);
    check_sum_product_groups(outs, a, p, ends);
    std::vector<FheliumPoly> out_handles, terms, plains;
    for (const auto& x : outs) out_handles.push_back(poly(x));
    for (const auto& x : a) terms.push_back(poly(x));
    for (const auto& x : p) plains.push_back(poly(x));
    FheliumOpArgs args = op(c, outs[0], a[0]);
    args.outs = out_handles.data();
    args.count = out_handles.size();
    args.terms = terms.data();
    args.plains = plains.data();
    args.term_count = terms.size();
    args.group_ends = ends.data();
    call(api.sum_product_groups, "sum_product_groups", args);
  }
  void mod_raise(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    const FheliumBackendApi& api = instance_->api();
    const bool has = api.struct_size >= offsetof(FheliumBackendApi, mod_raise) + sizeof(api.mod_raise);
    // Before 1.8 a plugin's ModRaise lifts a level 0 of one prime only: the host lifts two.
    const bool lifts_level_zero = c.context().level_basis(0).count == 1 || api.abi_minor >= 8;
    if (!has || api.mod_raise == nullptr || !lifts_level_zero) return Backend::mod_raise(c, out, a);
    call(api.mod_raise, "mod_raise", op(c, out, a));
  }
  void rotate(const BackendContext& c, const PolyArg& out, const PolyArg& a, std::uint32_t element,
              const KeyArg& k) override {
    FheliumOpArgs args = op(c, out, a);
    args.galois_element = element;
    args.key = key(k);
    call(instance_->api().rotate, "rotate", args);
  }
  void rotate_hoisted(const BackendContext& c, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> elements, std::span<const KeyArg> keys) override {
    std::vector<FheliumPoly> out_handles;
    std::vector<FheliumKey> key_handles;
    for (const auto& o : outs) out_handles.push_back(poly(o));
    for (const auto& k : keys) key_handles.push_back(key(k));
    FheliumOpArgs args = op(c, outs.empty() ? a : outs[0], a);
    args.outs = out_handles.data();
    args.galois_elements = elements.data();
    args.keys = key_handles.data();
    args.count = outs.size();
    call(instance_->api().rotate_hoisted, "rotate_hoisted", args);
  }
  bool supports_rotate_sum() const override { return rotate_sum_; }
  void rotate_sum(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                  std::span<const std::uint32_t> elements, std::span<const KeyArg> keys) override {
    check_rotate_sum(out, a, elements, keys);
    if (!supports_rotate_sum()) return Backend::rotate_sum(c, out, a, elements, keys);
    std::vector<FheliumPoly> terms;
    std::vector<FheliumKey> key_handles;
    for (const auto& x : a) terms.push_back(poly(x));
    for (const auto& k : keys) key_handles.push_back(key(k));
    FheliumOpArgs args = op(c, out, a[0]);
    args.terms = terms.data();
    args.term_count = terms.size();
    args.galois_elements = elements.data();
    args.keys = key_handles.data();
    args.count = key_handles.size();
    call(instance_->api().rotate_sum, "rotate_sum", args);
  }

 private:
  // Whether the plugin's backend has rotate_sum: its table entry, asked once
  // (a call with no terms; the answer is fixed for an instance).
  static bool probe_rotate_sum(const Instance& instance) {
    const FheliumBackendApi& api = instance.api();
    const bool has = api.struct_size >= offsetof(FheliumBackendApi, rotate_sum) + sizeof(api.rotate_sum);
    if (!has || api.rotate_sum == nullptr) return false;
    FheliumOpArgs probe{};
    probe.struct_size = sizeof(probe);
    probe.backend = instance.handle;
    FheliumError* error = api.rotate_sum(&probe);
    if (error == nullptr) return true;
    api.error_destroy(error);
    return false;
  }

  FheliumTransferArgs transfer(const Buffer* buffer, void* host, std::size_t bytes) const {
    FheliumTransferArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance_->handle;
    args.buffer = handle_of(buffer);
    args.host = host;
    args.bytes = bytes;
    return args;
  }

  FheliumOpArgs op(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg* b = nullptr) const {
    const auto* context = dynamic_cast<const PluginContext*>(&c);
    if (context == nullptr) throw InvalidArgumentError("a context prepared by another backend was passed to " + name());
    FheliumOpArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance_->handle;
    args.context = context->handle();
    args.out = poly(out);
    args.a = poly(a);
    if (b != nullptr) args.b = poly(*b);
    return args;
  }

  const FheliumStreamsExtension* streams() const { return instance_->streams; }
  // The STREAMS extension when it has the ABI 1.5 timing events.
  const FheliumStreamsExtension* timing() const {
    const FheliumStreamsExtension* s = streams();
    const bool has = s != nullptr && s->base.struct_size >= offsetof(FheliumStreamsExtension, event_elapsed) +
                                                                sizeof(FheliumStreamsExtension::event_elapsed);
    return has && s->event_create_timing != nullptr && s->event_elapsed != nullptr ? s : nullptr;
  }

  std::array<std::uint64_t, 2> capture_state() const {
    FheliumAsyncArgs args = async_args(*instance_);
    call_async(*instance_, streams()->capture_query, "capture_query", args);
    return {args.values[0], args.values[1]};
  }

  // NULL stands for the backend's own stream; others must be this backend's.
  FheliumStream* stream_handle(Stream* stream) const {
    if (stream == nullptr) return nullptr;
    const auto* s = dynamic_cast<const PluginStream*>(stream);
    if (s == nullptr || s->instance() != instance_.get()) {
      throw InvalidArgumentError("a stream that was not created by this " + name() +
                                 " backend (create_stream) was passed to it");
    }
    return s->handle();
  }
  FheliumEvent* event_handle(const Event& event) const {
    const auto* e = dynamic_cast<const PluginEvent*>(&event);
    if (e == nullptr || e->instance() != instance_.get()) {
      throw InvalidArgumentError("an event that was not created by this " + name() +
                                 " backend (create_event) was passed to it");
    }
    return e->handle();
  }

  void call(FheliumOpFn fn, const char* what, FheliumOpArgs args) const {
    if (fn == nullptr) throw BackendError(name() + " backend does not implement " + what);
    instance_->check(fn(&args), what);
  }

  std::shared_ptr<Instance> instance_;
  bool rotate_sum_;
};

// The STREAMS extension when the plugin's chain has one of the 1.1 size with
// its destroy functions (the wrappers' destructors call them unchecked);
// otherwise NULL, and the backend keeps the Backend defaults.
const FheliumStreamsExtension* find_streams(const FheliumBackendApi& api) {
  for (const FheliumExtension* e = api.extension_start; e != nullptr; e = e->next) {
    if (e->struct_size < offsetof(FheliumExtension, next) + sizeof(e->next)) break;  // a broken chain
    constexpr std::size_t abi_1_1_size =
        offsetof(FheliumStreamsExtension, recording_destroy) + sizeof(FheliumStreamsExtension::recording_destroy);
    if (e->type != FHELIUM_EXTENSION_STREAMS || e->struct_size < abi_1_1_size) continue;
    const auto* streams = reinterpret_cast<const FheliumStreamsExtension*>(e);
    if (streams->stream_destroy && streams->event_destroy && streams->recording_destroy) return streams;
  }
  return nullptr;
}

// The COLLECTIVES extension when the chain has a complete one (ABI 1.7).
const FheliumCollectivesExtension* find_collectives(const FheliumBackendApi& api) {
  for (const FheliumExtension* e = api.extension_start; e != nullptr; e = e->next) {
    if (e->struct_size < offsetof(FheliumExtension, next) + sizeof(e->next)) break;  // a broken chain
    if (e->type != FHELIUM_EXTENSION_COLLECTIVES || e->struct_size < sizeof(FheliumCollectivesExtension)) continue;
    const auto* c = reinterpret_cast<const FheliumCollectivesExtension*>(e);
    if (c->communicator_id && c->communicator_join && c->communicator_destroy && c->broadcast && c->group_begin &&
        c->group_end) {
      return c;
    }
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<Backend> make_plugin_backend(std::shared_ptr<PluginLibrary> library, int device) {
  auto instance = std::make_shared<Instance>();
  instance->library = std::move(library);
  FheliumBackendCreateArgs args{};
  args.struct_size = sizeof(args);
  args.device = device;
  FheliumError* error = instance->api().backend_create(&args);
  if (error != nullptr) {
    const std::string message = instance->api().error_message(error);
    instance->api().error_destroy(error);
    throw PluginError("backend plugin '" + instance->library->path + "' (" + instance->api().name +
                      ") could not create a backend for device " + std::to_string(device) + ": " + message);
  }
  instance->handle = args.backend;
  instance->streams = find_streams(instance->api());
  instance->collectives = find_collectives(instance->api());
  return std::make_shared<PluginBackend>(std::move(instance));
}

std::string describe_devices(Backend& backend) {
  auto* plugin = dynamic_cast<PluginBackend*>(&backend);
  if (plugin == nullptr) return "";
  const Instance& instance = plugin->instance();
  for (const FheliumExtension* e = instance.api().extension_start; e != nullptr; e = e->next) {
    if (e->type != FHELIUM_EXTENSION_DEVICE_INFO || e->struct_size < sizeof(FheliumDeviceInfoExtension)) continue;
    const auto* info = reinterpret_cast<const FheliumDeviceInfoExtension*>(e);
    char text[1024] = {};
    FheliumDeviceInfoArgs args{};
    args.struct_size = sizeof(args);
    args.backend = instance.handle;
    args.text = text;
    args.capacity = sizeof(text);
    instance.check(info->describe_devices(&args), "describe_devices");
    return text;
  }
  return "";
}

}  // namespace fhelium::plugins
