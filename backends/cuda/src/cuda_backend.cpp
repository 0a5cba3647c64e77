// The CUDA backend class: argument checks on the host, then kernels on the
// runtime's stream. Operations return before the work is done; download and
// synchronize wait. One operation at a time issues its launches (the
// workspace is shared through the stream order).
#include "fhelium/cuda/cuda_backend.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "device_runtime.hpp"
#include "fhelium/error.hpp"
#include "kernels.hpp"

namespace fhelium::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions options) : runtime_(std::make_shared<DeviceRuntime>(options.device)) {}

  std::string name() const override { return "cuda"; }
  cudaStream_t stream() const { return runtime_->stream(); }
  int device() const { return runtime_->device(); }

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    if (!context) throw BackendError("cuda prepare: null context");
    std::lock_guard lock(mutex_);
    auto& slot = contexts_[context->id()];
    if (auto cached = slot.lock()) return cached;
    auto prepared = std::make_shared<CudaContext>(std::move(context), runtime_);
    slot = prepared;
    return prepared;
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    return std::make_shared<DeviceBuffer>(runtime_, bytes);
  }

  void upload(Buffer& dst, const void* src, std::size_t bytes) override {
    runtime_->upload(device_buffer(dst, bytes, "upload").data(), src, bytes);
  }

  void download(const Buffer& src, void* dst, std::size_t bytes) override {
    runtime_->download(dst, device_buffer(src, bytes, "download").data(), bytes);
  }

  void synchronize() override { runtime_->synchronize(); }

  void add(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    Op op(*this, bc, "add");
    kernels::add(op.launch, op.poly(out), op.poly(a), op.poly(b));
  }

  void sub(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    Op op(*this, bc, "sub");
    kernels::sub(op.launch, op.poly(out), op.poly(a), op.poly(b));
  }

  void negate(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    Op op(*this, bc, "negate");
    kernels::negate(op.launch, op.poly(out), op.poly(a));
  }

  void add_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override {
    Op op(*this, bc, "add_constant");
    op.require_residues(residues, out.limbs);
    kernels::add_constant(op.launch, op.poly(out), op.poly(a), residues, ntt_domain);
  }

  void multiply_constant(const BackendContext& bc, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override {
    Op op(*this, bc, "multiply_constant");
    op.require_residues(residues, out.limbs);
    std::vector<u64> shoup_constants(static_cast<std::size_t>(out.limbs));
    for (int i = 0; i < out.limbs; ++i) {
      const auto index = static_cast<std::size_t>(i);
      shoup_constants[index] = shoup(residues[index], op.context.q()[index].value);
    }
    kernels::multiply_constant(op.launch, op.poly(out), op.poly(a), residues, shoup_constants);
  }

  void multiply_plain(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    Op op(*this, bc, "multiply_plain");
    kernels::multiply_plain(op.launch, op.poly(out), op.poly(a), op.poly(p));
  }

  void multiply(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    Op op(*this, bc, "multiply");
    kernels::multiply(op.launch, op.poly(out), op.poly(a), op.poly(b));
  }

  void to_ntt(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    Op op(*this, bc, "to_ntt");
    kernels::to_ntt(op.launch, op.poly(out), op.poly(a));
  }

  void to_coefficient(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    Op op(*this, bc, "to_coefficient");
    kernels::to_coefficient(op.launch, op.poly(out), op.poly(a));
  }

  void rescale(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    Op op(*this, bc, "rescale");
    if (a.limbs != out.limbs + 1 || out.limbs < 1 || a.components > 3) {
      throw BackendError("cuda rescale: input has " + std::to_string(a.limbs) + " limbs and output " +
                         std::to_string(out.limbs) + ", expected one limb fewer (and at most 3 components)");
    }
    kernels::rescale(op.launch, op.ctx.rescale(out.limbs), op.poly(out), op.poly(a), op.ctx.rescale_temp());
  }

  void drop_limbs(const BackendContext& bc, const PolyArg& out, const PolyArg& a) override {
    Op op(*this, bc, "drop_limbs");
    kernels::copy_limbs(op.launch, op.poly(out), op.poly(a));
  }

  void relinearize(const BackendContext& bc, const PolyArg& out, const PolyArg& a, const KeyArg& key) override {
    Op op(*this, bc, "relinearize");
    const kernels::Poly in = op.poly(a);
    const kernels::Poly o = op.poly(out);
    const KeySwitchView& ks = op.key_switch(a.limbs - 1);
    const u64* k = op.key(key);
    const std::size_t limb = op.launch.n;
    const std::size_t poly = static_cast<std::size_t>(in.limbs) * limb;
    const u64* c2 = in.data + 2 * poly;
    kernels::mod_up(op.launch, ks, op.ctx.work(), c2, 0);
    kernels::inner_product(op.launch, ks, op.ctx.work(), c2, k, 0, 0);
    kernels::mod_down(op.launch, ks, op.ctx.work(), o.data, in.data, 0, o.data + poly, in.data + poly);
  }

  void rotate(const BackendContext& bc, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    Op op(*this, bc, "rotate");
    const kernels::Poly in = op.poly(a);
    const kernels::Poly o = op.poly(out);
    op.require_galois(galois_element);
    const KeySwitchView& ks = op.key_switch(a.limbs - 1);
    const u64* k = op.key(key);
    const std::size_t poly = static_cast<std::size_t>(in.limbs) * op.launch.n;
    // g(c1) is never materialised: ModUp and the inner product read c1 through
    // the permutation, ModDown adds c0 through it.
    const u64* c1 = in.data + poly;
    kernels::mod_up(op.launch, ks, op.ctx.work(), c1, galois_element);
    kernels::inner_product(op.launch, ks, op.ctx.work(), c1, k, 0, galois_element);
    kernels::mod_down(op.launch, ks, op.ctx.work(), o.data, in.data, galois_element, o.data + poly, nullptr);
  }

  void rotate_hoisted(const BackendContext& bc, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    Op op(*this, bc, "rotate_hoisted");
    if (outs.size() != galois_elements.size() || outs.size() != keys.size()) {
      throw BackendError("cuda rotate_hoisted: " + std::to_string(outs.size()) + " outputs, " +
                         std::to_string(galois_elements.size()) + " Galois elements and " +
                         std::to_string(keys.size()) + " keys, expected equal counts");
    }
    const kernels::Poly in = op.poly(a);
    const KeySwitchView& ks = op.key_switch(a.limbs - 1);
    std::vector<kernels::Poly> o;
    std::vector<const u64*> k;
    for (std::size_t r = 0; r < outs.size(); ++r) {
      o.push_back(op.poly(outs[r]));
      k.push_back(op.key(keys[r]));
      op.require_galois(galois_elements[r]);
    }
    const std::size_t poly = static_cast<std::size_t>(in.limbs) * op.launch.n;
    const u64* c1 = in.data + poly;
    kernels::mod_up(op.launch, ks, op.ctx.work(), c1, 0);
    for (std::size_t r = 0; r < outs.size(); ++r) {
      kernels::inner_product(op.launch, ks, op.ctx.work(), c1, k[r], galois_elements[r], galois_elements[r]);
      kernels::mod_down(op.launch, ks, op.ctx.work(), o[r].data, in.data, galois_elements[r], o[r].data + poly,
                        nullptr);
    }
  }

 private:
  static const DeviceBuffer& device_buffer(const Buffer& buffer, std::size_t bytes, const char* what) {
    const auto* device = dynamic_cast<const DeviceBuffer*>(&buffer);
    if (!device) throw BackendError(std::string("cuda ") + what + ": the buffer does not belong to a CUDA backend");
    if (bytes > device->size_bytes()) {
      throw BackendError(std::string("cuda ") + what + " of " + std::to_string(bytes) + " bytes into a buffer of " +
                         std::to_string(device->size_bytes()) + " bytes");
    }
    return *device;
  }

  // One operation: the lock, the device, the context and checked views of the arguments.
  struct Op {
    Op(CudaBackend& backend, const BackendContext& bc, const char* name)
        : lock(backend.mutex_), ctx(context_of(bc, name)), context(ctx.context()), launch(ctx.launch()), what(name) {
      ctx.runtime()->activate();
    }

    static const CudaContext& context_of(const BackendContext& bc, const char* name) {
      const auto* c = dynamic_cast<const CudaContext*>(&bc);
      if (!c) throw BackendError(std::string("cuda ") + name + ": the context was not prepared by a CUDA backend");
      return *c;
    }

    kernels::Poly poly(const PolyArg& p) const {
      if (!p.buffer) throw BackendError(std::string("cuda ") + what + ": null buffer");
      if (p.components < 1 || p.components > 3 || p.limbs < 1 || p.limbs > context.key_limbs()) {
        throw BackendError(std::string("cuda ") + what + ": polynomial of " + std::to_string(p.components) +
                           " components and " + std::to_string(p.limbs) + " limbs is out of range");
      }
      const std::size_t bytes = static_cast<std::size_t>(p.components) * static_cast<std::size_t>(p.limbs) *
                                context.ring_degree() * sizeof(u64);
      return {device_buffer(*p.buffer, bytes, what).data(), p.components, p.limbs};
    }

    const u64* key(const KeyArg& k) const {
      if (!k.buffer) throw BackendError(std::string("cuda ") + what + ": null key");
      const std::size_t bytes = static_cast<std::size_t>(context.key_digits()) * 2 *
                                static_cast<std::size_t>(context.key_limbs()) * context.ring_degree() * sizeof(u64);
      return device_buffer(*k.buffer, bytes, what).data();
    }

    const KeySwitchView& key_switch(int level) const {
      if (level < 0 || level > context.max_level()) {
        throw BackendError(std::string("cuda ") + what + ": level " + std::to_string(level) + " is out of range");
      }
      return ctx.key_switch(level);
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
    kernels::Launch launch;
    const char* what;
  };

  std::shared_ptr<DeviceRuntime> runtime_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::weak_ptr<CudaContext>> contexts_;
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
         "." + std::to_string(p.minor);
}

void* native_stream(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) throw BackendError("native_stream: backend '" + backend.name() + "' is not a CUDA backend");
  return cuda->stream();
}

}  // namespace fhelium::cuda
