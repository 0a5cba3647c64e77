#include "fhelium/backend/recording_backend.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "fhelium/error.hpp"

namespace fhelium {
namespace {

class QueueStream final : public Stream {
 public:
  std::shared_ptr<WorkQueue> queue = std::make_shared<WorkQueue>();
};

// When a timing event's queue reached it.
struct Stamp {
  std::mutex mutex;
  std::optional<std::chrono::steady_clock::time_point> at;
  void set() {
    std::lock_guard lock(mutex);
    at = std::chrono::steady_clock::now();
  }
};

// A ticket on a queue; an event never recorded is complete.
class TicketEvent final : public Event {
 public:
  explicit TicketEvent(bool times) : timing(times) {}
  const bool timing;
  std::mutex mutex;
  std::shared_ptr<WorkQueue> queue;
  std::uint64_t ticket = 0;
  std::shared_ptr<Stamp> stamp;  // timing events, once recorded

  void wait() {
    std::shared_ptr<WorkQueue> q;
    std::uint64_t t = 0;
    {
      std::lock_guard lock(mutex);
      q = queue;
      t = ticket;
    }
    if (q) q->wait(t);
  }
};

// The queue of `stream`; nullptr is the backend's own.
std::shared_ptr<WorkQueue> queue_of(Stream* stream, const std::shared_ptr<WorkQueue>& own) {
  if (!stream) return own;
  auto* queue = dynamic_cast<QueueStream*>(stream);
  if (!queue) throw InvalidArgumentError("stream was not created by this backend (create_stream)");
  return queue->queue;
}

TicketEvent& ticket_event(const Event& event) {
  auto* ticket = dynamic_cast<const TicketEvent*>(&event);
  if (!ticket) throw InvalidArgumentError("event was not created by this backend (create_event)");
  return const_cast<TicketEvent&>(*ticket);
}

// Buffers allocated during a capture. A buffer released during the capture
// is reused by later capture allocations (safe: replays run in issue order);
// all of them live as long as the recording or a holder does.
struct Arena {
  std::mutex mutex;
  bool open = true;
  std::vector<std::shared_ptr<Buffer>> all;
  std::multimap<std::size_t, std::shared_ptr<Buffer>> released;
  std::size_t bytes = 0;
};

struct Lease {
  std::shared_ptr<Arena> arena;
  std::shared_ptr<Buffer> buffer;
  ~Lease() {
    std::lock_guard lock(arena->mutex);
    if (arena->open) arena->released.emplace(buffer->size_bytes(), buffer);
  }
};

class RecordedOps final : public Recording {
 public:
  RecordedOps(std::shared_ptr<WorkQueue> stream, std::shared_ptr<Arena> arena, std::vector<std::function<void()>> ops)
      : stream_(std::move(stream)),
        arena_(std::move(arena)),
        ops_(std::make_shared<std::vector<std::function<void()>>>(std::move(ops))) {}
  ~RecordedOps() override {
    try {
      stream_->drain();
    } catch (...) {  // a replay's error has nowhere to go from a destructor
    }
  }

  void launch() override {
    stream_->submit([ops = ops_] {
      for (const auto& op : *ops) op();
    });
  }
  std::size_t memory_bytes() const override { return arena_->bytes; }
  std::size_t operation_count() const override { return ops_->size(); }

 private:
  std::shared_ptr<WorkQueue> stream_;
  std::shared_ptr<Arena> arena_;
  std::shared_ptr<std::vector<std::function<void()>>> ops_;
};

std::vector<std::uint64_t> copied(std::span<const std::uint64_t> s) { return {s.begin(), s.end()}; }

}  // namespace

struct RecordingBackend::Capture {
  std::shared_ptr<Arena> arena = std::make_shared<Arena>();
  std::vector<std::function<void()>> ops;
};

RecordingBackend::RecordingBackend(std::shared_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {}

RecordingBackend::~RecordingBackend() {
  try {
    stream_->drain();
  } catch (...) {  // nothing left to report to
  }
}

namespace {
class OrderedCommunicator final : public DeviceCommunicator {
 public:
  OrderedCommunicator(std::function<void()> before, std::unique_ptr<DeviceCommunicator> inner)
      : before_(std::move(before)), inner_(std::move(inner)) {}
  void broadcast(Buffer& buffer, std::size_t bytes, int root) override {
    before_();
    inner_->broadcast(buffer, bytes, root);
  }
  void group_begin() override { inner_->group_begin(); }
  void group_end() override { inner_->group_end(); }

 private:
  std::function<void()> before_;
  std::unique_ptr<DeviceCommunicator> inner_;
};
}  // namespace

std::unique_ptr<DeviceCommunicator> RecordingBackend::join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                                        std::chrono::milliseconds timeout) {
  return std::make_unique<OrderedCommunicator>(
      [this] {
        refuse_during_capture("broadcast");
        stream_->drain();
      },
      inner().join_communicator(id, ranks, rank, timeout));
}

void RecordingBackend::refuse_during_capture(const char* call) const {
  if (capture_) {
    throw StateError(std::string(call) +
                     " is not allowed during capture: host I/O and synchronization "
                     "cannot be replayed (do it before capture or after end_capture)");
  }
}

void RecordingBackend::issue(std::function<void()> op) {
  if (capture_) {
    capture_->ops.push_back(std::move(op));
    return;
  }
  stream_->drain();
  op();
}

std::shared_ptr<BackendContext> RecordingBackend::prepare(std::shared_ptr<const Context> context) {
  refuse_during_capture("prepare (building context tables)");
  return inner().prepare(std::move(context));
}

std::shared_ptr<Buffer> RecordingBackend::allocate(std::size_t bytes) {
  if (!capture_) return inner().allocate(bytes);
  Arena& arena = *capture_->arena;
  std::shared_ptr<Buffer> buffer;
  {
    std::lock_guard lock(arena.mutex);
    auto reusable = arena.released.find(bytes);
    if (reusable != arena.released.end()) {
      buffer = std::move(reusable->second);
      arena.released.erase(reusable);
    }
  }
  if (!buffer) {
    buffer = inner().allocate(bytes);
    std::lock_guard lock(arena.mutex);
    arena.all.push_back(buffer);
    arena.bytes += bytes;
  }
  auto lease = std::make_shared<Lease>();  // built in place: a temporary's destructor would release it
  lease->arena = capture_->arena;
  lease->buffer = buffer;
  return std::shared_ptr<Buffer>(lease, buffer.get());  // the inner buffer, released into the arena
}

void RecordingBackend::upload(Buffer& dst, const void* src, std::size_t bytes) {
  refuse_during_capture("upload");
  stream_->drain();
  inner().upload(dst, src, bytes);
}

void RecordingBackend::upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill) {
  refuse_during_capture("upload_filled");
  stream_->drain();
  inner().upload_filled(dst, bytes, fill);
}

void RecordingBackend::download(const Buffer& src, void* dst, std::size_t bytes) {
  refuse_during_capture("download");
  stream_->drain();
  inner().download(src, dst, bytes);
}

void RecordingBackend::synchronize() {
  refuse_during_capture("synchronize");
  stream_->drain();
  inner().synchronize();
}

std::shared_ptr<Stream> RecordingBackend::create_stream() {
  refuse_during_capture("create_stream");
  return std::make_shared<QueueStream>();
}

std::shared_ptr<Event> RecordingBackend::create_event() {
  refuse_during_capture("create_event");
  return std::make_shared<TicketEvent>(false);
}

std::shared_ptr<Event> RecordingBackend::create_timing_event() {
  refuse_during_capture("create_timing_event");
  return std::make_shared<TicketEvent>(true);
}

void RecordingBackend::record_event(Event& event, Stream* stream) {
  refuse_during_capture("record_event");
  auto queue = queue_of(stream, stream_);
  TicketEvent& ticket = ticket_event(event);
  std::lock_guard lock(ticket.mutex);
  ticket.queue = queue;
  ticket.ticket = queue->last_ticket();  // eager work on the backend stream is already done
  if (!ticket.timing) return;
  // A new stamp each time, so that a stamp still queued from an earlier
  // record cannot overwrite this one. An idle queue is stamped at once (the
  // eager work before this call is done); a busy one when it gets here.
  ticket.stamp = std::make_shared<Stamp>();
  if (queue->done(ticket.ticket)) {
    ticket.stamp->set();
  } else {
    ticket.ticket = queue->submit([stamp = ticket.stamp] { stamp->set(); });
  }
}

double RecordingBackend::elapsed_seconds(const Event& start, const Event& end) {
  refuse_during_capture("elapsed_seconds");
  const auto recorded = [](const Event& e, const char* which) {
    TicketEvent& ticket = ticket_event(e);
    if (!ticket.timing) {
      throw InvalidArgumentError(std::string("elapsed_seconds: the ") + which +
                                 " event was made by create_event, not create_timing_event");
    }
    ticket.wait();
    std::shared_ptr<Stamp> stamp;
    {
      std::lock_guard lock(ticket.mutex);
      stamp = ticket.stamp;
    }
    std::optional<std::chrono::steady_clock::time_point> at;
    if (stamp) {
      std::lock_guard lock(stamp->mutex);
      at = stamp->at;
    }
    if (!at) throw StateError(std::string("elapsed_seconds: the ") + which + " event has not been recorded");
    return *at;
  };
  const auto start_at = recorded(start, "start");
  return std::chrono::duration<double>(recorded(end, "end") - start_at).count();
}

void RecordingBackend::wait_event(Stream* stream, const Event& event) {
  refuse_during_capture("wait_event");
  TicketEvent& ticket = ticket_event(event);
  std::lock_guard lock(ticket.mutex);
  if (!ticket.queue) return;
  queue_of(stream, stream_)->submit([queue = ticket.queue, t = ticket.ticket] { queue->wait(t); });
}

void RecordingBackend::synchronize_event(const Event& event) {
  refuse_during_capture("synchronize_event");
  ticket_event(event).wait();
}

void RecordingBackend::copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream) {
  auto op = [this, &dst, &src, bytes] { inner().copy(dst, src, bytes, nullptr); };
  if (!stream || capture_) {
    issue(op);  // during capture every copy is recorded on the backend's stream
    return;
  }
  queue_of(stream, stream_)->submit(op);
}

void RecordingBackend::begin_capture() {
  if (capture_) throw StateError("begin_capture: a capture is already in progress on backend '" + name() + "'");
  stream_->drain();
  capture_ = std::make_unique<Capture>();
}

std::unique_ptr<Recording> RecordingBackend::end_capture() {
  if (!capture_) throw StateError("end_capture: no capture is in progress on backend '" + name() + "'");
  std::unique_ptr<Capture> capture = std::move(capture_);
  {
    std::lock_guard lock(capture->arena->mutex);
    capture->arena->open = false;
    capture->arena->released.clear();
  }
  return std::make_unique<RecordedOps>(stream_, capture->arena, std::move(capture->ops));
}

// Operations: arguments are copied into the recorded closure (spans become
// vectors); buffers and contexts are referenced, as in a device graph.
void RecordingBackend::add(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) {
  issue([this, &c, out, a, b] { inner().add(c, out, a, b); });
}
void RecordingBackend::sub(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) {
  issue([this, &c, out, a, b] { inner().sub(c, out, a, b); });
}
void RecordingBackend::negate(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().negate(c, out, a); });
}
void RecordingBackend::add_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                                    std::span<const std::uint64_t> residues, bool ntt_domain) {
  issue([this, &c, out, a, r = copied(residues), ntt_domain] { inner().add_constant(c, out, a, r, ntt_domain); });
}
void RecordingBackend::multiply_constant(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                                         std::span<const std::uint64_t> residues) {
  issue([this, &c, out, a, r = copied(residues)] { inner().multiply_constant(c, out, a, r); });
}
void RecordingBackend::multiply_plain(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& p) {
  issue([this, &c, out, a, p] { inner().multiply_plain(c, out, a, p); });
}
void RecordingBackend::multiply(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b) {
  issue([this, &c, out, a, b] { inner().multiply(c, out, a, b); });
}
void RecordingBackend::to_ntt(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().to_ntt(c, out, a); });
}
void RecordingBackend::to_coefficient(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().to_coefficient(c, out, a); });
}
void RecordingBackend::rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().rescale(c, out, a); });
}
void RecordingBackend::drop_limbs(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().drop_limbs(c, out, a); });
}
void RecordingBackend::mod_raise(const BackendContext& c, const PolyArg& out, const PolyArg& a) {
  issue([this, &c, out, a] { inner().mod_raise(c, out, a); });
}
void RecordingBackend::relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const KeyArg& key) {
  issue([this, &c, out, a, key] { inner().relinearize(c, out, a, key); });
}

void RecordingBackend::multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                                            const PolyArg& b, const KeyArg& key) {
  issue([this, &c, out, a, b, key] { inner().multiply_relinearize(c, out, a, b, key); });
}
void RecordingBackend::multiply_relinearize_rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                                                    const PolyArg& b, const KeyArg& key) {
  issue([this, &c, out, a, b, key] { inner().multiply_relinearize_rescale(c, out, a, b, key); });
}
void RecordingBackend::sum_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                                    std::span<const PolyArg> p) {
  issue([this, &c, out, terms = std::vector<PolyArg>(a.begin(), a.end()),
         plains = std::vector<PolyArg>(p.begin(), p.end())] { inner().sum_products(c, out, terms, plains); });
}
void RecordingBackend::sum_constant_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                                             std::span<const std::uint64_t> r) {
  issue([this, &c, out, terms = std::vector<PolyArg>(a.begin(), a.end()), residues = copied(r)] {
    inner().sum_constant_products(c, out, terms, residues);
  });
}
void RecordingBackend::sum_product_groups(const BackendContext& c, std::span<const PolyArg> outs,
                                          std::span<const PolyArg> a, std::span<const PolyArg> p,
                                          std::span<const std::size_t> ends) {
  issue([this, &c, results = std::vector<PolyArg>(outs.begin(), outs.end()),
         terms = std::vector<PolyArg>(a.begin(), a.end()), plains = std::vector<PolyArg>(p.begin(), p.end()),
         group_ends = std::vector<std::size_t>(ends.begin(), ends.end())] {
    inner().sum_product_groups(c, results, terms, plains, group_ends);
  });
}
void RecordingBackend::rotate(const BackendContext& c, const PolyArg& out, const PolyArg& a,
                              std::uint32_t galois_element, const KeyArg& key) {
  issue([this, &c, out, a, galois_element, key] { inner().rotate(c, out, a, galois_element, key); });
}
void RecordingBackend::rotate_hoisted(const BackendContext& c, std::span<const PolyArg> outs, const PolyArg& a,
                                      std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) {
  issue([this, &c, o = std::vector<PolyArg>(outs.begin(), outs.end()), a,
         g = std::vector<std::uint32_t>(galois_elements.begin(), galois_elements.end()),
         k = std::vector<KeyArg>(keys.begin(), keys.end())] { inner().rotate_hoisted(c, o, a, g, k); });
}
void RecordingBackend::rotate_sum(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                                  std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) {
  issue([this, &c, out, terms = std::vector<PolyArg>(a.begin(), a.end()),
         g = std::vector<std::uint32_t>(galois_elements.begin(), galois_elements.end()),
         k = std::vector<KeyArg>(keys.begin(), keys.end())] { inner().rotate_sum(c, out, terms, g, k); });
}

}  // namespace fhelium
