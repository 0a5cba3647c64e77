#include "plugin_backend.hpp"

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

  const FheliumBackendApi& api() const { return *library->api; }
  ~Instance() {
    if (handle != nullptr) api().backend_destroy(handle);
  }

  // Turns an error object into the matching exception (and frees it).
  void check(FheliumError* error, const char* what) const {
    if (error == nullptr) return;
    const std::string message = std::string(library->api->name) + " backend: " + what + ": " + api().error_message(error);
    const int32_t code = api().error_code(error);
    api().error_destroy(error);
    switch (code) {
      case FHELIUM_ERROR_INVALID_ARGUMENT: throw InvalidArgumentError(message);
      case FHELIUM_ERROR_STATE: throw StateError(message);
      default: throw BackendError(message);
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

FheliumBuffer* handle_of(const Buffer* buffer) {
  const auto* b = dynamic_cast<const PluginBuffer*>(buffer);
  if (b == nullptr) throw InvalidArgumentError("a buffer that does not belong to this plugin backend was passed to it");
  return b->handle();
}

FheliumPoly poly(const PolyArg& p) { return {handle_of(p.buffer), p.components, p.limbs}; }
FheliumKey key(const KeyArg& k) { return {handle_of(k.buffer), k.digits}; }

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Instance> instance) : instance_(std::move(instance)) {}

  std::string name() const override { return instance_->api().name; }
  Instance& instance() const { return *instance_; }

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
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
  void download(const Buffer& src, void* dst, std::size_t bytes) override {
    FheliumTransferArgs args = transfer(&src, dst, bytes);
    instance_->check(instance_->api().download(&args), "download");
  }
  void synchronize() override { instance_->check(instance_->api().synchronize(instance_->handle), "synchronize"); }

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

 private:
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

  void call(FheliumOpFn fn, const char* what, FheliumOpArgs args) const {
    if (fn == nullptr) throw BackendError(name() + " backend does not implement " + what);
    instance_->check(fn(&args), what);
  }

  std::shared_ptr<Instance> instance_;
};

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
