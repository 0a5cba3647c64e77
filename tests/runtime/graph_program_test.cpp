// The GraphProgram contract on the CPU backend (recorded operations re-run on
// stable buffers): replay correctness, borrowed vs owned outputs, signature
// checks before any copy, overwrite protection, one user at a time, close.
#include "fhelium/runtime/graph_program.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "helpers.hpp"
#include "runtime_backend.hpp"

namespace fhelium::runtime {
namespace {

using test::Fixture;
using test::Message;

// y = rescale(sum_i rotate(x, i) * d_i) + (x at the output level): reads x
// at the start and at the end, so a copy racing a replay changes the result.
struct Evaluator {
  Fixture& f;
  std::vector<long> steps;
  std::vector<Message> diagonals;
  std::vector<Plaintext> encoded;
  GaloisKeys keys;

  Evaluator(Fixture& fixture, int size) : f(fixture) {
    for (int i = 0; i < size; ++i) {
      steps.push_back(i + 1);
      diagonals.push_back(f.random_message(1.0));
    }
    keys = f.galois_keys(steps);
    for (const auto& d : diagonals) encoded.push_back(f.plaintext(d, f.context->max_level(), f.scale()));
  }

  ValueTree operator()(const ValueTree& in) const {
    const Ciphertext& x = in.at("x").ciphertext();
    std::vector<Ciphertext> terms;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      terms.push_back(f.engine.multiply_plain(f.engine.rotate(x, steps[i], keys), encoded[i]));
    }
    Ciphertext y = f.engine.rescale(f.engine.sum(terms));
    Ciphertext x_low = f.engine.drop_to_level(x, y.state.level);
    x_low.state.scale = y.state.scale;  // same nominal scale for the clear check: x is small
    return ValueTree(ValueTree::Map{{"y", f.engine.add(y, x_low)}});
  }

  Message clear(const Message& x) const {
    Message y(x.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Message r = test::rotate_left(x, steps[i]);
      for (std::size_t k = 0; k < y.size(); ++k) y[k] += r[k] * diagonals[i][k];
    }
    return y;
  }
};

ValueTree inputs(const Ciphertext& x) { return ValueTree(ValueTree::Map{{"x", x}}); }

ReplayOptions owned_output() {
  ReplayOptions options;
  options.copy_output = true;
  return options;
}

std::vector<u64> residues(Fixture& f, const ValueTree& out) { return f.engine.download(out.at("y").ciphertext()).data; }

class GraphProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!backend_.skip_reason.empty()) GTEST_SKIP() << backend_.skip_reason;
  }
  test::TestBackend backend_ = test::runtime_test_backend();
  Fixture f{test::small_params(12, 3), 21, 0, backend_.backend};
};

TEST_F(GraphProgramTest, ReplaysMatchTheClearMessageAndEagerExecutionBitForBit) {
  Evaluator evaluator(f, 4);
  const Message m0 = f.random_message(0.5);
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(f.encrypt(m0)));
  EXPECT_GT(program.stats().operations, 8u);
  EXPECT_GT(program.stats().graph_bytes, 0u);
  EXPECT_EQ(program.stats().backend, f.engine.backend().name());
  for (int run = 0; run < 3; ++run) {
    const Message m = f.random_message(0.5);
    const Ciphertext x = f.encrypt(m);
    const std::vector<u64> eager = residues(f, evaluator(inputs(x)));
    const ValueTree out = program.replay(inputs(x));
    EXPECT_EQ(residues(f, out), eager) << "replay " << run;
    Message expected = evaluator.clear(m);
    // x rides along at y's scale, so it contributes x * (x.scale / y.scale).
    const Ciphertext& y = out.at("y").ciphertext();
    const double ratio = f.scale() / y.state.scale;
    for (std::size_t k = 0; k < expected.size(); ++k) expected[k] += m[k] * ratio;
    EXPECT_LT(test::max_error(expected, f.decrypt(y)), 1e-4) << "replay " << run;
  }
}

TEST_F(GraphProgramTest, OwnedOutputSurvivesTheNextReplayWhileTheBorrowedOneChanges) {
  Evaluator evaluator(f, 2);
  GraphProgram program =
      GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(f.encrypt(f.random_message(0.5))));
  const Ciphertext x1 = f.encrypt(f.random_message(0.5));
  const Ciphertext x2 = f.encrypt(f.random_message(0.5));
  const std::vector<u64> expected1 = residues(f, evaluator(inputs(x1)));
  const std::vector<u64> expected2 = residues(f, evaluator(inputs(x2)));
  const ValueTree kept = program.replay(inputs(x1), owned_output());
  const ValueTree borrowed = program.replay(inputs(x1));
  EXPECT_EQ(residues(f, kept), expected1);
  EXPECT_EQ(residues(f, borrowed), expected1);
  program.replay(inputs(x2));
  EXPECT_EQ(residues(f, kept), expected1) << "the owned copy must survive a later replay";
  EXPECT_EQ(residues(f, borrowed), expected2) << "the borrowed output is the program's storage";
}

TEST_F(GraphProgramTest, EverySignatureMismatchIsRefusedBeforeAnyCopy) {
  Evaluator evaluator(f, 1);
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(x));
  const ValueTree before = program.replay(inputs(x), owned_output());

  Fixture other(test::small_params(12, 3), 22);
  auto with_state = [&](auto change) {
    Ciphertext y = x;
    change(y.state);
    return inputs(y);
  };
  const std::vector<std::pair<ValueTree, std::string>> cases = {
      {ValueTree(ValueTree::Map{{"x", x}, {"z", x}}), "structure: expected {x:v}, got {x:v,z:v}"},
      {ValueTree(ValueTree::Map{{"x", Plaintext{{x.state, x.buffer}}}}), "x.type: expected ciphertext, got plaintext"},
      {inputs(other.encrypt(other.random_message(0.5))), "x.context: expected"},
      {inputs(f.engine.drop_to_level(x, 2)), "x.level: expected 3, got 2"},
      {with_state([](ValueState& s) { s.scale *= 2; }), "x.scale: expected 2^40"},
      {with_state([](ValueState& s) { s.domain = Domain::coefficient; }), "x.domain: expected ntt, got coefficient"},
      {with_state([](ValueState& s) { s.components = 3; }), "x.components: expected 2, got 3"},
      {with_state([](ValueState& s) { s.basis = Basis::QP; }), "x.active_primes: expected 4 primes"},
      {with_state([](ValueState& s) { s.word_size = WordSize::bits32; }), "x.word_size: expected 64, got 32"},
  };
  for (const auto& [tree, message] : cases) {
    try {
      program.replay(tree);
      ADD_FAILURE() << "accepted a mismatch: " << message;
    } catch (const StateError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  // Nothing was copied: the stable inputs still hold x, so the borrowed output
  // of a launch without new inputs... is checked by replaying x again.
  EXPECT_EQ(residues(f, program.replay(inputs(x))), residues(f, before));
}

TEST_F(GraphProgramTest, StagingWaitsForTheRunningReplayToFinishReadingItsInputs) {
  Evaluator evaluator(f, 24);  // slow enough that an unordered copy lands mid-replay
  const Ciphertext x1 = f.encrypt(f.random_message(0.5));
  const Ciphertext x2 = f.encrypt(f.random_message(0.5));
  const std::vector<u64> expected1 = residues(f, evaluator(inputs(x1)));
  const std::vector<u64> expected2 = residues(f, evaluator(inputs(x2)));
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(x1), {.warmup = 1});
  Backend& backend = f.engine.backend();
  auto copy_stream = backend.create_stream();
  auto first_done = backend.create_event();
  ReplayOptions asynchronous;
  asynchronous.synchronize = false;
  asynchronous.done_event = first_done;
  StageOptions on_copy_stream;
  on_copy_stream.stream = copy_stream;
  for (int round = 0; round < 3; ++round) {
    const ValueTree out = program.replay(inputs(x1), asynchronous);
    // Eager staging on another stream while the replay runs.
    StagedInputs staged = program.stage(inputs(x2), on_copy_stream);
    backend.synchronize_event(*first_done);
    EXPECT_EQ(residues(f, out), expected1) << "round " << round << ": the staged copy overwrote live inputs";
    EXPECT_EQ(residues(f, program.replay_staged(std::move(staged))), expected2);
  }
}

TEST_F(GraphProgramTest, AStaleStagedHandleIsRefused) {
  Evaluator evaluator(f, 1);
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(x));
  StagedInputs first = program.stage(inputs(x));
  StagedInputs second = program.stage(inputs(x));
  EXPECT_THROW(program.replay_staged(std::move(first)), StateError);
  EXPECT_NO_THROW(program.replay_staged(std::move(second)));
}

TEST_F(GraphProgramTest, ConcurrentUseOfOneInstanceIsRefused) {
  Evaluator evaluator(f, 6);
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  const std::vector<u64> expected = residues(f, evaluator(inputs(x)));
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(x), {.warmup = 0});
  std::atomic<bool> stop{false};
  std::atomic<int> worker_runs{0};
  std::thread worker([&] {
    while (!stop) {
      try {
        ValueTree out = program.replay(inputs(x), owned_output());
        if (f.engine.download(out.at("y").ciphertext()).data == expected) ++worker_runs;
      } catch (const StateError&) {  // the main thread held the instance
      }
    }
  });
  int refused = 0;
  for (int attempt = 0; attempt < 2000 && refused == 0; ++attempt) {
    try {
      program.replay(inputs(x));
    } catch (const StateError& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another call"), std::string::npos) << e.what();
      ++refused;
    }
  }
  stop = true;
  worker.join();
  EXPECT_GT(refused, 0) << "two threads replayed one instance at once without an error";
}

TEST_F(GraphProgramTest, UseAfterCloseIsRefused) {
  Evaluator evaluator(f, 1);
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  GraphProgram program = GraphProgram::capture(f.engine.backend(), *f.context, evaluator, inputs(x));
  program.close();
  EXPECT_TRUE(program.closed());
  EXPECT_THROW(program.replay(inputs(x)), StateError);
  EXPECT_THROW(program.stage(inputs(x)), StateError);
  EXPECT_NO_THROW(program.close());
}

TEST_F(GraphProgramTest, HostIoAndKeyUploadsAreRefusedDuringCaptureAndTheBackendStaysUsable) {
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  auto downloads = [&](const ValueTree& in) {
    (void)f.engine.download(in.at("x").ciphertext());
    return in;
  };
  auto encrypts = [&](const ValueTree& in) {
    (void)f.encrypt(f.random_message(0.5));  // fresh randomness, uploaded
    return in;
  };
  auto loads_keys = [&](const ValueTree& in) {
    (void)f.galois_keys({1});
    return in;
  };
  for (const Schedule& schedule : {Schedule(downloads), Schedule(encrypts), Schedule(loads_keys)}) {
    try {
      GraphProgram::capture(f.engine.backend(), *f.context, schedule, inputs(x), {.warmup = 0});
      ADD_FAILURE() << "capture accepted host I/O";
    } catch (const StateError& e) {
      EXPECT_NE(std::string(e.what()).find("not allowed during capture"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(f.engine.backend().capturing());
  }
  EXPECT_NO_THROW((void)f.engine.download(f.engine.negate(x)));
}

TEST_F(GraphProgramTest, AScheduleWhoseOutputChangesShapeIsRefused) {
  const Ciphertext x = f.encrypt(f.random_message(0.5));
  int calls = 0;
  auto drifting = [&](const ValueTree& in) {
    const Ciphertext& c = in.at("x").ciphertext();
    return ValueTree(ValueTree::Map{{"y", ++calls == 1 ? f.engine.negate(c) : f.engine.drop_to_level(c, 1)}});
  };
  try {
    GraphProgram::capture(f.engine.backend(), *f.context, drifting, inputs(x), {.warmup = 1});
    ADD_FAILURE() << "a changing output level was accepted";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("y.level: expected 3, got 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fhelium::runtime
