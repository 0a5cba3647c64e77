#include "fhelium/runtime/graph_program.hpp"

#include <atomic>
#include <chrono>

#include "fhelium/error.hpp"

namespace fhelium::runtime {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The same tree shape with fresh backend buffers; copies the residues when asked.
ValueTree clone_tree(Backend& backend, const ValueTree& tree, bool copy_values) {
  if (tree.is_list()) {
    ValueTree::List out;
    for (const auto& child : tree.list()) out.push_back(clone_tree(backend, child, copy_values));
    return out;
  }
  if (tree.is_map()) {
    ValueTree::Map out;
    for (const auto& [name, child] : tree.map()) out.emplace(name, clone_tree(backend, child, copy_values));
    return out;
  }
  auto clone = [&](const Value& v, Value& out) {
    out.state = v.state;
    out.buffer = backend.allocate(v.buffer->size_bytes());
    if (copy_values) backend.copy(*out.buffer, *v.buffer, v.buffer->size_bytes(), nullptr);
  };
  if (tree.is_ciphertext()) {
    Ciphertext c;
    clone(tree.ciphertext(), c);
    return c;
  }
  Plaintext p;
  clone(tree.plaintext(), p);
  return p;
}

// Visits the leaves of two trees of the same signature side by side.
template <class F>
void zip_leaves(const ValueTree& a, const ValueTree& b, F&& visit) {
  std::vector<const Value*> left;
  std::vector<const Value*> right;
  a.for_each_leaf([&](const std::string&, const ValueTree& leaf) { left.push_back(&leaf.value()); });
  b.for_each_leaf([&](const std::string&, const ValueTree& leaf) { right.push_back(&leaf.value()); });
  for (std::size_t i = 0; i < left.size() && i < right.size(); ++i) visit(*left[i], *right[i]);
}

std::size_t tree_bytes(const ValueTree& tree) {
  std::size_t bytes = 0;
  tree.for_each_leaf([&](const std::string&, const ValueTree& leaf) {
    bytes += leaf.value().buffer ? leaf.value().buffer->size_bytes() : 0;
  });
  return bytes;
}

void require_buffers(const ValueTree& tree, const char* what) {
  tree.for_each_leaf([&](const std::string& path, const ValueTree& leaf) {
    if (!leaf.value().buffer)
      throw InvalidArgumentError(std::string(what) + " " + (path.empty() ? "value" : path) +
                                 " has no backend buffer (an empty value)");
  });
}

}  // namespace

struct GraphProgram::Impl {
  Backend* backend = nullptr;
  const Context* context = nullptr;
  Schedule schedule;  // keeps the static state the recording refers to alive
  ValueTreeSignature input_signature;
  ValueTreeSignature output_signature;
  ValueTree stable_inputs;
  ValueTree outputs;
  std::unique_ptr<Recording> recording;
  std::shared_ptr<Event> inputs_consumed;  // recorded after each replay
  CaptureStats stats;
  std::atomic<bool> busy{false};
  bool closed = false;
  std::uint64_t staged_generation = 0;
  // Sources of the last stage(), kept until their copies are known done.
  ValueTree retained_sources;
  std::shared_ptr<Event> retained_ready;

  void release_retained() {
    if (retained_ready) backend->synchronize_event(*retained_ready);
    retained_sources = ValueTree();
    retained_ready.reset();
  }
};

namespace {

// Refuses concurrent use of one instance and use after close.
class UseGuard {
 public:
  UseGuard(std::atomic<bool>& busy, bool closed, const char* call) : busy_(busy) {
    if (busy_.exchange(true)) {
      throw StateError(std::string("GraphProgram::") + call +
                       ": the instance is in use by another call; one instance serves one worker at a time "
                       "(capture a separate instance per worker)");
    }
    if (closed) {
      busy_ = false;
      throw StateError(std::string("GraphProgram::") + call + ": the program is closed");
    }
  }
  ~UseGuard() { busy_ = false; }
  UseGuard(const UseGuard&) = delete;
  UseGuard& operator=(const UseGuard&) = delete;

 private:
  std::atomic<bool>& busy_;
};

}  // namespace

GraphProgram::GraphProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphProgram::GraphProgram(GraphProgram&&) noexcept = default;
GraphProgram& GraphProgram::operator=(GraphProgram&& other) noexcept {
  if (this != &other) {
    try {
      close();
    } catch (...) {  // the moved-over program's pending errors have nowhere to go
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

GraphProgram::~GraphProgram() {
  try {
    close();
  } catch (...) {  // destructors do not throw; call close() to see errors
  }
}

GraphProgram GraphProgram::capture(Backend& backend, const Context& context, Schedule schedule,
                                   const ValueTree& example_inputs, const CaptureOptions& options) {
  if (!schedule) throw InvalidArgumentError("GraphProgram::capture: the schedule is empty");
  if (options.warmup < 0) {
    throw InvalidArgumentError("GraphProgram::capture: warmup is " + std::to_string(options.warmup) +
                               ", expected 0 or more");
  }
  if (!backend.supports_capture()) {
    throw BackendError("GraphProgram::capture: backend '" + backend.name() + "' cannot capture operations");
  }
  require_buffers(example_inputs, "example input");
  auto impl = std::make_unique<Impl>();
  impl->backend = &backend;
  impl->context = &context;
  impl->schedule = std::move(schedule);
  impl->input_signature = ValueTreeSignature::of(example_inputs, context);
  impl->stats.backend = backend.name();

  // Warm-up, outside capture: builds tables, caches and workspaces.
  auto start = std::chrono::steady_clock::now();
  std::optional<ValueTreeSignature> warm_output;
  for (int i = 0; i < options.warmup; ++i) {
    ValueTree out = impl->schedule(example_inputs);
    backend.synchronize();
    warm_output = ValueTreeSignature::of(out, context);
  }
  impl->stats.warmup_seconds = seconds_since(start);

  // Stable inputs hold the example's residues, so capture sees real data.
  impl->stable_inputs = clone_tree(backend, example_inputs, true);
  impl->inputs_consumed = backend.create_event();
  backend.synchronize();

  start = std::chrono::steady_clock::now();
  backend.begin_capture();
  try {
    impl->outputs = impl->schedule(impl->stable_inputs);
  } catch (...) {
    try {
      backend.end_capture();  // leaves the backend usable; the partial recording is dropped
    } catch (...) {           // the backend's own report of the failed capture; the schedule's error is the cause
    }
    throw;
  }
  impl->recording = backend.end_capture();
  impl->stats.capture_seconds = seconds_since(start);
  require_buffers(impl->outputs, "schedule output");
  impl->output_signature = ValueTreeSignature::of(impl->outputs, context);
  if (warm_output) {
    if (auto difference = warm_output->first_difference(impl->output_signature)) {
      throw StateError("GraphProgram::capture: the schedule's output changed between warm-up and capture (" +
                       *difference + "); a captured schedule must have a fixed shape and levels");
    }
  }

  // A synchronized validation replay.
  start = std::chrono::steady_clock::now();
  impl->recording->launch();
  backend.record_event(*impl->inputs_consumed, nullptr);
  backend.synchronize();
  impl->stats.first_replay_seconds = seconds_since(start);
  impl->stats.graph_bytes = impl->recording->memory_bytes();
  impl->stats.operations = impl->recording->operation_count();
  impl->stats.buffer_bytes = tree_bytes(impl->stable_inputs) + tree_bytes(impl->outputs);
  return GraphProgram(std::move(impl));
}

ValueTree GraphProgram::replay(const ValueTree& inputs, const ReplayOptions& options) {
  ReplayOptions waited = options;
  if (!waited.synchronize) waited.synchronize = true;
  return replay_staged(stage(inputs), waited);
}

StagedInputs GraphProgram::stage(const ValueTree& inputs, const StageOptions& options) {
  if (!impl_) throw StateError("GraphProgram::stage: the program was moved from");
  UseGuard guard(impl_->busy, impl_->closed, "stage");
  Impl& p = *impl_;
  // The whole tree is validated before the first byte is copied.
  require_buffers(inputs, "input");
  if (auto difference = p.input_signature.first_difference(ValueTreeSignature::of(inputs, *p.context))) {
    throw StateError("GraphProgram inputs do not match the captured signature: " + *difference);
  }
  p.release_retained();
  Backend& backend = *p.backend;
  Stream* stream = options.stream.get();
  // Overwrite protection: the copies wait for the last replay to finish reading.
  backend.wait_event(stream, *p.inputs_consumed);
  for (const auto& event : options.wait_events) {
    if (event) backend.wait_event(stream, *event);
  }
  zip_leaves(p.stable_inputs, inputs, [&](const Value& dst, const Value& src) {
    backend.copy(*dst.buffer, *src.buffer, src.buffer->size_bytes(), stream);
  });
  StagedInputs staged;
  staged.backend_ = &backend;
  staged.owner_ = &p;
  staged.generation_ = ++p.staged_generation;
  staged.ready_ = backend.create_event();
  backend.record_event(*staged.ready_, stream);
  staged.sources_ = inputs;
  if (options.synchronize) backend.synchronize_event(*staged.ready_);
  return staged;
}

StagedInputs::~StagedInputs() {
  // Unconsumed: the sources are released only after their copies are done.
  if (backend_ && ready_) {
    try {
      backend_->synchronize_event(*ready_);
    } catch (...) {  // nothing to report to from a destructor
    }
  }
}

ValueTree GraphProgram::replay_staged(StagedInputs staged, const ReplayOptions& options) {
  if (!impl_) throw StateError("GraphProgram::replay_staged: the program was moved from");
  UseGuard guard(impl_->busy, impl_->closed, "replay_staged");
  Impl& p = *impl_;
  if (staged.owner_ != &p) throw InvalidArgumentError("replay_staged: the staged inputs belong to another program");
  if (staged.generation_ != p.staged_generation) {
    throw StateError("replay_staged: these staged inputs were overwritten by a later stage() (staged #" +
                     std::to_string(staged.generation_) + ", latest #" + std::to_string(p.staged_generation) + ")");
  }
  Backend& backend = *p.backend;
  backend.wait_event(nullptr, *staged.ready_);
  for (const auto& event : options.wait_events) {
    if (event) backend.wait_event(nullptr, *event);
  }
  p.recording->launch();
  backend.record_event(*p.inputs_consumed, nullptr);
  if (options.done_event) backend.record_event(*options.done_event, nullptr);
  // The handle's sources stay alive until the next stage or close.
  p.retained_sources = std::move(staged.sources_);
  p.retained_ready = std::move(staged.ready_);
  staged.backend_ = nullptr;
  ++p.staged_generation;  // a handle is used once

  ValueTree result = options.copy_output ? clone_tree(backend, p.outputs, true) : p.outputs;
  if (options.synchronize.value_or(false)) backend.synchronize();
  return result;
}

const ValueTreeSignature& GraphProgram::input_signature() const { return impl_->input_signature; }
const ValueTreeSignature& GraphProgram::output_signature() const { return impl_->output_signature; }
const CaptureStats& GraphProgram::stats() const { return impl_->stats; }
bool GraphProgram::closed() const { return !impl_ || impl_->closed; }

void GraphProgram::close() {
  if (!impl_ || impl_->closed) return;
  UseGuard guard(impl_->busy, false, "close");
  Impl& p = *impl_;
  p.closed = true;
  p.backend->synchronize();
  p.retained_sources = ValueTree();
  p.retained_ready.reset();
  p.recording.reset();
  p.outputs = ValueTree();
  p.stable_inputs = ValueTree();
  p.inputs_consumed.reset();
  p.schedule = nullptr;
}

}  // namespace fhelium::runtime
