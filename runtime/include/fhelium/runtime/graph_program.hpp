// GraphProgram: a fixed evaluator captured once and replayed on new inputs.
//
// `schedule` is any callable of the dynamic inputs with static state (keys,
// encoded weights, an Executable) bound in its closure. capture() runs it
// `warmup` times outside capture, records one run on the backend (a CUDA
// Graph on the GPU; a recorded operation list on the CPU, re-run on stable
// buffers), then replays once, synchronized, to validate.
//
// Inputs are copied into stable input buffers before each replay; the whole
// input tree is checked against the captured ValueTreeSignature before the
// first byte is copied. A replay's output is borrowed (the program's storage,
// overwritten by the next replay) unless `copy_output` asks for an owned copy.
// One instance is used by one thread at a time: a concurrent call is refused.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fhelium/engine.hpp"
#include "fhelium/runtime/value_tree.hpp"
#include "fhelium/runtime/value_tree_signature.hpp"

namespace fhelium::runtime {

using Schedule = std::function<ValueTree(const ValueTree&)>;

struct CaptureOptions {
  int warmup = 2;  // uncaptured runs before capture (tables, caches, workspace)
};

struct CaptureStats {
  double warmup_seconds = 0;
  double capture_seconds = 0;
  double first_replay_seconds = 0;  // the synchronized validation replay
  std::size_t graph_bytes = 0;      // memory held by the recording (graph and its intermediates)
  std::size_t buffer_bytes = 0;     // stable input and output buffers
  std::size_t operations = 0;       // operations (graph nodes) recorded
  std::string backend;              // the backend that recorded it ("cuda": a CUDA Graph)
};

struct ReplayOptions {
  // Host waits for the replay to finish. Unset: replay() waits, the split
  // path's replay_staged() does not (no host barrier unless asked).
  std::optional<bool> synchronize;
  bool copy_output = false;   // return an owned copy instead of the borrowed output
  std::vector<std::shared_ptr<Event>> wait_events;  // the replay waits for these, on the device
  std::shared_ptr<Event> done_event;                // recorded when the replay has finished
};

struct StageOptions {
  std::shared_ptr<Stream> stream;                   // nullptr: the backend's stream
  std::vector<std::shared_ptr<Event>> wait_events;  // the copies wait for these, on the device
  bool synchronize = false;                         // host waits for the copies
};

class GraphProgram;

// Inputs copied into a program's stable buffers, not yet replayed. Holds the
// source values until the copies are known to be ordered before their release.
class StagedInputs {
 public:
  StagedInputs() = default;
  StagedInputs(StagedInputs&&) noexcept = default;
  StagedInputs& operator=(StagedInputs&&) noexcept = default;
  ~StagedInputs();
  const std::shared_ptr<Event>& ready() const { return ready_; }

 private:
  friend class GraphProgram;
  Backend* backend_ = nullptr;
  const void* owner_ = nullptr;
  std::uint64_t generation_ = 0;
  std::shared_ptr<Event> ready_;
  ValueTree sources_;
};

class GraphProgram {
 public:
  // `backend` (usually engine.backend()) must outlive the program.
  static GraphProgram capture(Backend& backend, const Context& context, Schedule schedule,
                              const ValueTree& example_inputs, const CaptureOptions& options = {});

  GraphProgram(GraphProgram&&) noexcept;
  GraphProgram& operator=(GraphProgram&&) noexcept;
  ~GraphProgram();

  // stage + replay_staged.
  ValueTree replay(const ValueTree& inputs, const ReplayOptions& options = {});
  // Validates and copies inputs into the stable buffers. The copies always
  // wait, on the device, for the previous replay to finish reading them.
  StagedInputs stage(const ValueTree& inputs, const StageOptions& options = {});
  // Launches the recording on the staged inputs (consumes the handle); the
  // host does not wait unless options.synchronize is true.
  ValueTree replay_staged(StagedInputs staged, const ReplayOptions& options = {});

  const ValueTreeSignature& input_signature() const;
  const ValueTreeSignature& output_signature() const;
  const CaptureStats& stats() const;

  // Waits for submitted work, releases the recording, buffers and retained
  // outputs. Later calls (other than close) throw StateError.
  void close();
  bool closed() const;

 private:
  struct Impl;
  explicit GraphProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fhelium::runtime
