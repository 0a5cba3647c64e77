// A template for a third-party FHElium backend. It starts as a
// ForwardingBackend over the CPU reference backend, so it passes the
// conformance suite from the first build; override the operations one at a
// time with your own implementation (the signatures are in
// fhelium/backend/backend.hpp) and run `fhelium-conformance --backend PATH` after
// each: it compares your residues bit for bit with the reference.
#pragma once

#include <memory>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/backend/forwarding_backend.hpp"

namespace example {

using namespace fhelium;

class TemplateBackend : public ForwardingBackend {
 public:
  TemplateBackend() : ForwardingBackend(cpu::make_cpu_backend({1})) {}

  std::string name() const override { return "template"; }

  // Override an operation like this. Start with the memory functions
  // (allocate, upload, download) so the buffers are yours, then replace the
  // forwarding call in each operation with your implementation.
  void add(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    ForwardingBackend::add(c, out, a, b);
  }
};

}  // namespace example
