#include "state_backend.hpp"

#include "fhelium/error.hpp"

namespace fhelium::runtime::detail {
namespace {

class StateBuffer final : public Buffer {
 public:
  explicit StateBuffer(std::size_t bytes) : bytes_(bytes) {}
  std::size_t size_bytes() const override { return bytes_; }

 private:
  std::size_t bytes_;
};

class StateContext final : public BackendContext {
 public:
  explicit StateContext(std::shared_ptr<const Context> context) : context_(std::move(context)) {}
  const Context& context() const override { return *context_; }

 private:
  std::shared_ptr<const Context> context_;
};

class StateBackend final : public Backend {
 public:
  std::string name() const override { return "state"; }
  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    return std::make_shared<StateContext>(std::move(context));
  }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override { return std::make_shared<StateBuffer>(bytes); }
  void upload(Buffer&, const void*, std::size_t) override {
    throw BackendError("state backend: upload is refused, its buffers hold no data");
  }
  void download(const Buffer&, void*, std::size_t) override {
    throw BackendError("state backend: download is refused, its buffers hold no data");
  }
  void synchronize() override {}
  void copy(Buffer&, const Buffer&, std::size_t, Stream*) override {}

  void add(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&) override {}
  void sub(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&) override {}
  void negate(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void add_constant(const BackendContext&, const PolyArg&, const PolyArg&, std::span<const std::uint64_t>,
                    bool) override {}
  void multiply_constant(const BackendContext&, const PolyArg&, const PolyArg&,
                         std::span<const std::uint64_t>) override {}
  void multiply_plain(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&) override {}
  void sum_products(const BackendContext&, const PolyArg&, std::span<const PolyArg>,
                    std::span<const PolyArg>) override {}
  void sum_constant_products(const BackendContext&, const PolyArg&, std::span<const PolyArg>,
                             std::span<const std::uint64_t>) override {}
  void sum_product_groups(const BackendContext&, std::span<const PolyArg>, std::span<const PolyArg>,
                          std::span<const PolyArg>, std::span<const std::size_t>) override {}
  void multiply(const BackendContext&, const PolyArg&, const PolyArg&, const PolyArg&) override {}
  void to_ntt(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void to_coefficient(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void rescale(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void drop_limbs(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void mod_raise(const BackendContext&, const PolyArg&, const PolyArg&) override {}
  void relinearize(const BackendContext&, const PolyArg&, const PolyArg&, const KeyArg&) override {}
  void rotate(const BackendContext&, const PolyArg&, const PolyArg&, std::uint32_t, const KeyArg&) override {}
  void rotate_hoisted(const BackendContext&, std::span<const PolyArg>, const PolyArg&, std::span<const std::uint32_t>,
                      std::span<const KeyArg>) override {}
  bool supports_rotate_sum() const override { return true; }
  void rotate_sum(const BackendContext&, const PolyArg&, std::span<const PolyArg>, std::span<const std::uint32_t>,
                  std::span<const KeyArg>) override {}
};

}  // namespace

std::shared_ptr<Backend> make_state_backend() { return std::make_shared<StateBackend>(); }

}  // namespace fhelium::runtime::detail
