// A plugin whose operations throw: a std exception in add and in
// multiply_relinearize (ABI 1.2: the host calls the table's entry, not
// multiply then relinearize), a non-std one in negate.
#include "forwarding_backend.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {

class Throwing final : public fhelium::test::ForwardingBackend {
 public:
  std::string name() const override { return "throwing"; }
  void add(const fhelium::BackendContext&, const fhelium::PolyArg&, const fhelium::PolyArg&,
           const fhelium::PolyArg&) override {
    throw std::runtime_error("boom inside add");
  }
  void negate(const fhelium::BackendContext&, const fhelium::PolyArg&, const fhelium::PolyArg&) override { throw 42; }
  void multiply_relinearize(const fhelium::BackendContext&, const fhelium::PolyArg&, const fhelium::PolyArg&,
                            const fhelium::PolyArg&, const fhelium::KeyArg&) override {
    throw std::runtime_error("boom inside multiply_relinearize");
  }
};

std::shared_ptr<fhelium::Backend> make(int) { return std::make_shared<Throwing>(); }

}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN("throwing", "0.0.1", make)
