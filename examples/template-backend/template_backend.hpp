// A template for a third-party FHElium backend. Every operation forwards to
// the CPU reference backend; replace the bodies, one at a time, with your own
// implementation and check each with `fhelium-conformance --backend PATH`,
// which compares your residues bit for bit with the reference.
#pragma once

#include <memory>

#include "fhelium/cpu/cpu_backend.hpp"

namespace example {

using namespace fhelium;

class TemplateBackend : public Backend {
 public:
  TemplateBackend() : reference_(cpu::make_cpu_backend({1})) {}

  std::string name() const override { return "template"; }

  // Build your per-context tables (twiddles, RNS constants) here, once.
  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> c) override {
    return reference_->prepare(std::move(c));
  }

  // Memory: return your own Buffer subclass (host or device memory).
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override { return reference_->allocate(bytes); }
  void upload(Buffer& dst, const void* src, std::size_t bytes) override { reference_->upload(dst, src, bytes); }
  void download(const Buffer& src, void* dst, std::size_t bytes) override { reference_->download(src, dst, bytes); }
  void synchronize() override { reference_->synchronize(); }

  // Elementwise operations.
  void add(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    reference_->add(c, out, a, b);
  }
  void sub(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    reference_->sub(c, out, a, b);
  }
  void negate(const BackendContext& c, const PolyArg& out, const PolyArg& a) override { reference_->negate(c, out, a); }
  void add_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override {
    reference_->add_constant(c, out, a, residues, ntt_domain);
  }
  void multiply_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override {
    reference_->multiply_constant(c, out, a, residues);
  }
  void multiply_plain(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    reference_->multiply_plain(c, out, a, p);
  }
  void multiply(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    reference_->multiply(c, out, a, b);
  }

  // Transforms and levels.
  void to_ntt(const BackendContext& c, const PolyArg& out, const PolyArg& a) override { reference_->to_ntt(c, out, a); }
  void to_coefficient(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    reference_->to_coefficient(c, out, a);
  }
  void rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    reference_->rescale(c, out, a);
  }
  void drop_limbs(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    reference_->drop_limbs(c, out, a);
  }

  // Key switching.
  void relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const KeyArg& key) override {
    reference_->relinearize(c, out, a, key);
  }
  void rotate(const BackendContext& c, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    reference_->rotate(c, out, a, galois_element, key);
  }
  void rotate_hoisted(const BackendContext& c, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    reference_->rotate_hoisted(c, outs, a, galois_elements, keys);
  }

 private:
  std::shared_ptr<Backend> reference_;
};

}  // namespace example
