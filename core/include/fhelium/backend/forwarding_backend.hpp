// A Backend that forwards every operation to another one: the base for
// decorators (poisoning, fault injection in tests, tracing) and for a new
// backend written one operation at a time. multiply_relinearize,
// multiply_relinearize_rescale, sum_products, sum_constant_products and
// sum_product_groups are not forwarded: their defaults call this->multiply
// and this->relinearize (this->multiply_relinearize and this->rescale;
// this->multiply_plain and this->add; this->multiply_constant and
// this->sum_products; this->sum_products), so a decorator's
// overrides (buffers of its own, a replaced operation) see every part; a
// decorator that only observes (recording, poisoning) forwards them to
// inner() itself.
#pragma once

#include <memory>

#include "fhelium/backend/backend.hpp"

namespace fhelium {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::shared_ptr<Backend> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override {
    return inner_->prepare(std::move(context));
  }
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override { return inner_->allocate(bytes); }
  void upload(Buffer& dst, const void* src, std::size_t bytes) override { inner_->upload(dst, src, bytes); }
  void download(const Buffer& src, void* dst, std::size_t bytes) override { inner_->download(src, dst, bytes); }
  void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) override {
    inner_->upload_filled(dst, bytes, fill);
  }
  void synchronize() override { inner_->synchronize(); }

  std::shared_ptr<Stream> create_stream() override { return inner_->create_stream(); }
  std::shared_ptr<Event> create_event() override { return inner_->create_event(); }
  void record_event(Event& event, Stream* stream) override { inner_->record_event(event, stream); }
  void wait_event(Stream* stream, const Event& event) override { inner_->wait_event(stream, event); }
  void synchronize_event(const Event& event) override { inner_->synchronize_event(event); }
  std::shared_ptr<Event> create_timing_event() override { return inner_->create_timing_event(); }
  double elapsed_seconds(const Event& start, const Event& end) override { return inner_->elapsed_seconds(start, end); }
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream) override {
    inner_->copy(dst, src, bytes, stream);
  }
  MemoryUsage memory_usage() const override { return inner_->memory_usage(); }
  bool has_device_collectives() const override { return inner_->has_device_collectives(); }
  std::optional<CommunicatorId> communicator_id() override { return inner_->communicator_id(); }
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                        std::chrono::milliseconds timeout) override {
    return inner_->join_communicator(id, ranks, rank, timeout);
  }
  bool supports_capture() const override { return inner_->supports_capture(); }
  bool capturing() const override { return inner_->capturing(); }
  void begin_capture() override { inner_->begin_capture(); }
  std::unique_ptr<Recording> end_capture() override { return inner_->end_capture(); }

  void add(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    inner_->add(c, out, a, b);
  }
  void sub(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    inner_->sub(c, out, a, b);
  }
  void negate(const BackendContext& c, const PolyArg& out, const PolyArg& a) override { inner_->negate(c, out, a); }
  void add_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override {
    inner_->add_constant(c, out, a, residues, ntt_domain);
  }
  void multiply_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override {
    inner_->multiply_constant(c, out, a, residues);
  }
  void multiply_plain(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& p) override {
    inner_->multiply_plain(c, out, a, p);
  }
  void multiply(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) override {
    inner_->multiply(c, out, a, b);
  }
  void to_ntt(const BackendContext& c, const PolyArg& out, const PolyArg& a) override { inner_->to_ntt(c, out, a); }
  void to_coefficient(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    inner_->to_coefficient(c, out, a);
  }
  void rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a) override { inner_->rescale(c, out, a); }
  void drop_limbs(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    inner_->drop_limbs(c, out, a);
  }
  void mod_raise(const BackendContext& c, const PolyArg& out, const PolyArg& a) override {
    inner_->mod_raise(c, out, a);
  }
  void relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const KeyArg& key) override {
    inner_->relinearize(c, out, a, key);
  }
  void rotate(const BackendContext& c, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override {
    inner_->rotate(c, out, a, galois_element, key);
  }
  void rotate_hoisted(const BackendContext& c, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    inner_->rotate_hoisted(c, outs, a, galois_elements, keys);
  }
  bool supports_rotate_sum() const override { return inner_->supports_rotate_sum(); }
  void rotate_sum(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                  std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    inner_->rotate_sum(c, out, a, galois_elements, keys);
  }

 protected:
  Backend& inner() const { return *inner_; }

 private:
  std::shared_ptr<Backend> inner_;
};

}  // namespace fhelium
