// Gives a synchronous host backend the asynchronous half of the Backend
// interface: streams (worker threads), events, and capture by recording the
// operations and re-running them on the same buffers. The CPU backend is
// wrapped in it; a third-party host backend can be too.
//
// Ordering: eager operations run on the calling thread after everything
// queued on the backend's stream (replays) has finished. Replays run on the
// backend stream's worker; copies may run on other streams' workers.
#pragma once

#include <memory>

#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/work_queue.hpp"

namespace fhelium {

class RecordingBackend final : public ForwardingBackend {
 public:
  explicit RecordingBackend(std::shared_ptr<Backend> inner);
  ~RecordingBackend() override;

  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) override;
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override;
  void upload(Buffer& dst, const void* src, std::size_t bytes) override;
  void download(const Buffer& src, void* dst, std::size_t bytes) override;
  void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) override;
  void synchronize() override;

  std::shared_ptr<Stream> create_stream() override;
  std::shared_ptr<Event> create_event() override;
  void record_event(Event& event, Stream* stream) override;
  void wait_event(Stream* stream, const Event& event) override;
  void synchronize_event(const Event& event) override;
  std::shared_ptr<Event> create_timing_event() override;
  double elapsed_seconds(const Event& start, const Event& end) override;
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream) override;

  // The inner backend's collectives, run like eager operations: after the
  // queued replays, and refused during a capture.
  std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                        std::chrono::milliseconds timeout) override;

  bool supports_capture() const override { return true; }
  bool capturing() const override { return capture_ != nullptr; }
  void begin_capture() override;
  std::unique_ptr<Recording> end_capture() override;

  void add(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) override;
  void sub(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) override;
  void negate(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void add_constant(const BackendContext&, const PolyArg& out, const PolyArg& a,
                    std::span<const std::uint64_t> residues, bool ntt_domain) override;
  void multiply_constant(const BackendContext&, const PolyArg& out, const PolyArg& a,
                         std::span<const std::uint64_t> residues) override;
  void multiply_plain(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& p) override;
  void multiply(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) override;
  void to_ntt(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void to_coefficient(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void rescale(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void drop_limbs(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void mod_raise(const BackendContext&, const PolyArg& out, const PolyArg& a) override;
  void relinearize(const BackendContext&, const PolyArg& out, const PolyArg& a, const KeyArg& key) override;
  // Recorded as one call, so the inner backend's own (fused) version replays.
  void multiply_relinearize_rescale(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                    const KeyArg& key) override;
  void multiply_relinearize(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                            const KeyArg& key) override;
  void sum_products(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                    std::span<const PolyArg> p) override;
  void sum_constant_products(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override;
  void sum_product_groups(const BackendContext&, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                          std::span<const PolyArg> p, std::span<const std::size_t> ends) override;
  void rotate(const BackendContext&, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
              const KeyArg& key) override;
  void rotate_hoisted(const BackendContext&, std::span<const PolyArg> outs, const PolyArg& a,
                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override;
  void rotate_sum(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                  std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override;

  struct Capture;  // the recording in progress

 private:
  // Records `op` while capturing; otherwise runs it now, after queued replays.
  void issue(std::function<void()> op);
  void refuse_during_capture(const char* call) const;

  std::shared_ptr<WorkQueue> stream_ = std::make_shared<WorkQueue>();  // replays
  std::unique_ptr<Capture> capture_;
};

}  // namespace fhelium
