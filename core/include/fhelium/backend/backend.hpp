// The Backend interface: coarse, asynchronous operations on residue arrays
// held in backend memory. The Engine validates every operand's state before
// calling here, so a backend only checks what is its own (memory, device).
//
// Layout: a value is `components x limbs x N` words, limb-major. A Q-basis
// array with `limbs` limbs holds the primes of the level with that many
// (Context::level_of_limbs; q_0 .. q_{limbs-1} with 64-bit words). Key-
// switching keys are `digits x 2 x key_limbs x N` (Q primes, then P primes),
// NTT domain.
//
// Operations are issued on the backend's stream; they may return before the
// work is done. `download` and `synchronize` wait. Outputs may alias inputs
// only where stated.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "fhelium/context.hpp"

namespace fhelium {

// Backend-owned memory (host or device).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::size_t size_bytes() const = 0;
};

// A backend's tables for one Context (twiddles, RNS constants, workspace).
class BackendContext {
 public:
  virtual ~BackendContext() = default;
  virtual const Context& context() const = 0;
};

// An ordering queue of a backend: a CUDA stream, a worker thread on the CPU.
class Stream {
 public:
  virtual ~Stream() = default;
};

// A point in a stream's work that another stream or the host can wait for.
class Event {
 public:
  virtual ~Event() = default;
};

// The default timing event: the host clock when it is recorded, which is when
// a synchronous backend's earlier work has finished.
class HostClockEvent : public Event {
 public:
  std::optional<std::chrono::steady_clock::time_point> recorded_at;
};

// A captured schedule: the operations issued between begin_capture and
// end_capture, replayable with the same buffers (a CUDA Graph on the GPU).
// One rank's device-to-device collectives (Backend::join_communicator).
// Every rank calls the same collectives in the same order, each with its
// own buffer of the same size.
class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  // The root's `bytes` into every other rank's buffer, ordered on the
  // backend's stream (the host does not wait).
  virtual void broadcast(Buffer& buffer, std::size_t bytes, int root) = 0;
  // The collectives between group_begin and group_end are issued as one
  // (several broadcasts with different roots: an all-gather; NCCL needs
  // the group, since a rank is a root of one and a receiver of the others).
  virtual void group_begin() {}
  virtual void group_end() {}
};

// Names one communicator: made by one rank, passed to every rank.
using CommunicatorId = std::array<std::uint8_t, 128>;

class Recording {
 public:
  virtual ~Recording() = default;
  // Enqueues one replay on the backend's stream; the host does not wait.
  virtual void launch() = 0;
  // Backend memory the recording holds: buffers allocated during capture
  // and the graph itself.
  virtual std::size_t memory_bytes() const = 0;
  // Operations (graph nodes) recorded.
  virtual std::size_t operation_count() const = 0;
};

struct MemoryUsage {
  std::size_t current_bytes = 0;  // backend memory in use now
  std::size_t peak_bytes = 0;     // the most in use since the backend was created
};

struct PolyArg {
  Buffer* buffer = nullptr;
  int components = 0;
  int limbs = 0;
};

struct KeyArg {
  const Buffer* buffer = nullptr;
  int digits = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // Builds (or returns the cached) tables for a context; done once, off the hot path.
  virtual std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> context) = 0;

  virtual std::shared_ptr<Buffer> allocate(std::size_t bytes) = 0;
  virtual void upload(Buffer& dst, const void* src, std::size_t bytes) = 0;
  virtual void download(const Buffer& src, void* dst, std::size_t bytes) = 0;
  // Writes `bytes` into dst through host memory the backend lends (its
  // pinned staging, or dst itself on a host backend): fill(chunk, offset)
  // writes bytes [offset, offset + chunk.size()) of the value, for
  // consecutive chunks of at most upload_chunk_bytes. The loaders read and
  // check a file straight into it, with no host copy of the object. An
  // exception from fill propagates, and dst's content is then unspecified.
  // The default fills one host copy and uploads it.
  using ChunkFill = std::function<void(std::span<std::byte> chunk, std::size_t offset)>;
  static constexpr std::size_t upload_chunk_bytes = std::size_t{8} << 20;
  virtual void upload_filled(Buffer& dst, std::size_t bytes, const ChunkFill& fill);
  virtual void synchronize() = 0;

  // Streams, events and capture. The defaults serve a synchronous backend
  // that cannot capture: events complete at once and copy goes through host
  // memory. `stream == nullptr` means the backend's own stream.
  virtual std::shared_ptr<Stream> create_stream();
  virtual std::shared_ptr<Event> create_event();
  // Marks the current end of `stream`'s work.
  virtual void record_event(Event& event, Stream* stream);
  // Work issued to `stream` after this call waits for `event`; the host does not.
  virtual void wait_event(Stream* stream, const Event& event);
  // The host waits for `event`.
  virtual void synchronize_event(const Event& event);
  // An event that also times the backend's work: record one before and one
  // after some work, then elapsed_seconds(start, end) waits for `end` and
  // returns the time between them on the backend's own clock (CUDA events on
  // the GPU). The default is a HostClockEvent, exact for a synchronous backend.
  virtual std::shared_ptr<Event> create_timing_event();
  virtual double elapsed_seconds(const Event& start, const Event& end);
  // Copies `bytes` from src to dst, ordered on `stream`.
  virtual void copy(Buffer& dst, const Buffer& src, std::size_t bytes, Stream* stream);
  virtual MemoryUsage memory_usage() const { return {}; }

  // Device collectives between backends of this kind (NCCL on cuda, memory
  // copies between cpu backends of one process): one rank asks for an id
  // (each id may cost the backend resources until it is joined), every rank
  // joins with it; join returns once all `ranks` have joined and throws
  // BackendError after `timeout`. Without them (has_device_collectives()
  // false, communicator_id() nullopt) the runtime stages through host memory
  // (fhelium/runtime/device_group.hpp).
  virtual bool has_device_collectives() const { return false; }
  virtual std::optional<CommunicatorId> communicator_id() { return std::nullopt; }
  virtual std::unique_ptr<DeviceCommunicator> join_communicator(const CommunicatorId& id, int ranks, int rank,
                                                                std::chrono::milliseconds timeout);

  // Operations issued between begin_capture and end_capture are recorded,
  // not run. Buffers allocated meanwhile belong to the recording (reused
  // after they are released, in issue order). upload, download, synchronize,
  // prepare and stream/event calls are refused with StateError while
  // capturing: they are host I/O or synchronization a replay cannot repeat.
  virtual bool supports_capture() const { return false; }
  virtual bool capturing() const { return false; }
  virtual void begin_capture();
  virtual std::unique_ptr<Recording> end_capture();

  // Elementwise, any domain. `b.components <= a.components`; components of
  // `a` beyond those of `b` are copied. out may alias a or b.
  virtual void add(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) = 0;
  virtual void sub(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) = 0;
  virtual void negate(const BackendContext&, const PolyArg& out, const PolyArg& a) = 0;
  // Adds the constant with the given residues (one per limb) to component 0:
  // to every coefficient in the NTT domain, to coefficient 0 otherwise.
  virtual void add_constant(const BackendContext&, const PolyArg& out, const PolyArg& a,
                            std::span<const std::uint64_t> residues, bool ntt_domain) = 0;
  // Multiplies every component by a constant (one residue per limb).
  virtual void multiply_constant(const BackendContext&, const PolyArg& out, const PolyArg& a,
                                 std::span<const std::uint64_t> residues) = 0;
  // Every component of a times the one-component plaintext p; NTT domain.
  virtual void multiply_plain(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& p) = 0;
  // (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0, a1 b1); NTT domain.
  virtual void multiply(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b) = 0;
  // out = a_0 p_0 + a_1 p_1 + ... (every component of a_i times the
  // one-component plaintext p_i; NTT domain), or a_0 + a_1 + ... when p is
  // empty (any domain). Every a_i has out's components and limbs; out may
  // not alias an a_i or p_i. One pass over the operands where the backend fuses it:
  // a linear transform's diagonals are these sums. The default runs
  // multiply_plain and add through a temporary (the same residues).
  virtual void sum_products(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                            std::span<const PolyArg> p);
  // out = a_0 r_0 + a_1 r_1 + ...: every component of a_i times the constant
  // whose residues are r[i * out.limbs .. (i + 1) * out.limbs) (any domain).
  // Every a_i has out's components and limbs; out may not alias an a_i. One
  // pass where the backend fuses it: a polynomial's leaves, sum c_i P_i, are
  // these sums. The default runs multiply_constant into one temporary per
  // term and sum_products over them (the same residues).
  virtual void sum_constant_products(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                                     std::span<const std::uint64_t> r);
  // Several sum_products with plaintexts in one call: outs[g] = the sum of
  // a_t p_t over group g's terms, t in [ends[g - 1], ends[g]) (ends[-1] = 0;
  // ends.size() = outs.size(), ends.back() = a.size() = p.size()). Every
  // output has the first one's components and limbs; no output aliases an
  // operand or another output. Groups may share ciphertexts (a linear
  // transform's giant groups read the same baby rotations), so a backend
  // that fuses it reads each once. The default runs sum_products per group.
  virtual void sum_product_groups(const BackendContext&, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                                  std::span<const PolyArg> p, std::span<const std::size_t> ends);

  virtual void to_ntt(const BackendContext&, const PolyArg& out, const PolyArg& a) = 0;
  virtual void to_coefficient(const BackendContext&, const PolyArg& out, const PolyArg& a) = 0;

  // From a's level l to l - 1, with rounding: round(x A / D), D the product of
  // the primes l drops and A of those l - 1 adds (Context::rescale; with
  // 64-bit words D = q_l, the last limb, and A = 1); NTT domain.
  virtual void rescale(const BackendContext&, const PolyArg& out, const PolyArg& a) = 0;
  // Keeps the limbs of out's level, a window of a's (mod switch; the first
  // out.limbs with 64-bit words).
  virtual void drop_limbs(const BackendContext&, const PolyArg& out, const PolyArg& a) = 0;
  // ModRaise (bootstrapping): a has one limb (q_0), coefficient domain; each
  // limb i of out gets the centered lift of a's residues reduced modulo q_i,
  // coefficient domain. The default runs on the host (download, lift,
  // upload), so it cannot be captured; a backend that captures overrides it.
  virtual void mod_raise(const BackendContext&, const PolyArg& out, const PolyArg& a);

  // (c0, c1, c2) -> (c0, c1) + KeySwitch(c2); NTT domain.
  virtual void relinearize(const BackendContext&, const PolyArg& out, const PolyArg& a, const KeyArg& key) = 0;
  // relinearize(multiply(a, b)): (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0)
  // + KeySwitch(a1 b1); NTT domain, the same residues as the two calls. The
  // default runs the two through a temporary; a backend may fuse them (the
  // product never stored). out may not alias a or b.
  virtual void multiply_relinearize(const BackendContext&, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                    const KeyArg& key);
  // rescale(multiply_relinearize(a, b)): out is at the level below a's and
  // b's; the same residues as the calls. The default runs them through a
  // temporary; a backend may fuse ModDown with the rescale (one forward NTT
  // of the kept limbs instead of two). out may not alias a or b.
  virtual void multiply_relinearize_rescale(const BackendContext&, const PolyArg& out, const PolyArg& a,
                                            const PolyArg& b, const KeyArg& key);
  // (c0, c1) -> (g(c0), 0) + KeySwitch(g(c1)) for X -> X^g; NTT domain.
  virtual void rotate(const BackendContext&, const PolyArg& out, const PolyArg& a, std::uint32_t galois_element,
                      const KeyArg& key) = 0;
  // Several rotations of one ciphertext sharing one ModUp.
  virtual void rotate_hoisted(const BackendContext&, std::span<const PolyArg> outs, const PolyArg& a,
                              std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) = 0;
  // out = rotate(a_0, g_0) + rotate(a_1, g_1) + ... with one ModDown: the
  // key switches' inner products are summed in the extended basis (Q_l and
  // P), ModDown runs once, and g_i(c0_i) are added (a linear transform's
  // giant rotations). One rounding instead of one per term, so not the
  // residues of separate rotations and adds. Every a_i and out: 2
  // components at one level, NTT domain; out may not alias an a_i. Only
  // where supports_rotate_sum(): the default throws BackendError (it needs
  // the backend's own ModUp and inner product).
  virtual bool supports_rotate_sum() const { return false; }
  virtual void rotate_sum(const BackendContext&, const PolyArg& out, std::span<const PolyArg> a,
                          std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys);
};

// The shapes of a product that is relinearized (multiply_relinearize,
// rescaled: multiply_relinearize_rescale; their defaults call it before
// anything runs, and a backend's own version checks the same shapes first):
// a and b of 2 components at one level of the context, out of 2 components
// at that level (rescaled: the level below). InvalidArgumentError naming
// what differs.
void check_product_operands(const Context&, const char* operation, const PolyArg& out, const PolyArg& a,
                            const PolyArg& b, bool rescaled);

// Backend::rotate_sum's rules on its operands' shapes (a backend's own
// version calls it first): InvalidArgumentError naming what differs.
void check_rotate_sum(const PolyArg& out, std::span<const PolyArg> a, std::span<const std::uint32_t> galois_elements,
                      std::span<const KeyArg> keys);
// Backend::sum_products's rules on its operands' shapes (a backend's own
// version calls it first): InvalidArgumentError naming what differs.
void check_sum_products(const PolyArg& out, std::span<const PolyArg> a, std::span<const PolyArg> p);
// Backend::sum_constant_products's rules, likewise.
void check_sum_constant_products(const PolyArg& out, std::span<const PolyArg> a, std::span<const std::uint64_t> r);
// Backend::sum_product_groups's rules, likewise.
void check_sum_product_groups(std::span<const PolyArg> outs, std::span<const PolyArg> a, std::span<const PolyArg> p,
                              std::span<const std::size_t> ends);

}  // namespace fhelium
