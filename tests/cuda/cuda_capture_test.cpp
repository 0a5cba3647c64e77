// The CUDA backend's streams, events, copies, memory usage and capture (CUDA
// Graphs). A schedule captured through the Engine on stable input buffers is
// replayed on new inputs copied into them, and every output is compared with
// == against the same schedule run eagerly on CUDA and on the CPU backend.
// The capture test runs first in this executable, so its kernels are first
// launched inside the capture (no warm-up). Every test skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "expectations.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "helpers.hpp"
#include "require_gpu.hpp"
#include "world.hpp"

namespace fhelium::test {
namespace {

const std::vector<long> steps{1, -3};

// Every op family the backend has, with temporaries released along the way
// (their capture memory is reused by later allocations).
std::vector<Ciphertext> schedule(const Engine& e, const Ciphertext& a, const Ciphertext& b, const RelinKey& rk,
                                 const GaloisKeys& gk) {
  std::vector<Ciphertext> out;
  Ciphertext scaled;
  {
    const Ciphertext product = e.multiply(a, b);
    const Ciphertext relin = e.relinearize(product, rk);
    scaled = e.rescale(relin);
  }
  out.push_back(scaled);
  out.push_back(e.multiply_relinearize(a, b, rk));
  out.push_back(e.multiply_relinearize_rescale(a, b, rk));  // fused on cuda where ModDown takes its general path
  out.push_back(e.rotate(scaled, 1, gk));
  for (Ciphertext& r : e.rotate_hoisted(scaled, steps, gk)) out.push_back(std::move(r));
  Ciphertext acc = e.add_scalar(a, 0.25);
  for (int i = 0; i < 3; ++i) acc = e.sub(e.add(acc, b), a);  // temporaries come and go
  const Ciphertext times = e.multiply_scalar(acc, -1.5, std::ldexp(1.0, 20));
  const Ciphertext coefficients = e.to_coefficient(times);
  out.push_back(coefficients);
  out.push_back(e.to_ntt(coefficients));
  out.push_back(e.drop_to_level(times, 1));
  out.push_back(e.negate(e.drop_to_level(scaled, 0)));
  out.push_back(e.mod_raise(e.drop_to_level(scaled, 0)));  // bootstrapping's first step, on the device
  return out;
}

// A fresh ciphertext of a random message at the top level (host form).
HostValue fresh(World& w) {
  return w.encryptor.encrypt(w.encoder.encode(w.random_message(), w.context->max_level(), w.scale()), w.pk);
}

// Captures the schedule, replays it on four input sets and compares every
// output with == against the eager CUDA run and the CPU backend's.
void expect_replays_bit_for_bit(const CkksParameters& params, std::uint8_t seed) {
  World w(params, seed);
  const std::shared_ptr<Backend>& backend = w.gpu_backend;
  ASSERT_TRUE(backend->supports_capture());
  Engine& gpu = w.gpu;
  Engine& cpu = w.cpu;
  const RelinKey& gpu_rk = w.gpu_rk;
  const RelinKey& cpu_rk = w.cpu_rk;
  const GaloisKeys& gpu_gk = w.gpu_gk;
  const GaloisKeys& cpu_gk = w.cpu_gk;
  auto encrypt = [&w] { return fresh(w); };
  constexpr int sets = 4;
  std::vector<HostValue> host_a, host_b;
  for (int k = 0; k < sets; ++k) {
    host_a.push_back(encrypt());
    host_b.push_back(encrypt());
  }

  // Stable inputs; the capture launches nothing and allocates from its arena.
  const Ciphertext a = gpu.upload_ciphertext(host_a[0]);
  const Ciphertext b = gpu.upload_ciphertext(host_b[0]);
  const MemoryUsage before = backend->memory_usage();
  backend->begin_capture();
  EXPECT_TRUE(backend->capturing());
  std::vector<Ciphertext> captured = schedule(gpu, a, b, gpu_rk, gpu_gk);
  std::unique_ptr<Recording> recording = backend->end_capture();
  EXPECT_FALSE(backend->capturing());
  EXPECT_GT(recording->operation_count(), 20u);
  EXPECT_GT(recording->memory_bytes(), 0u);
  EXPECT_GE(backend->memory_usage().current_bytes, before.current_bytes + recording->memory_bytes());

  const std::size_t bytes = a.buffer->size_bytes();
  auto side = backend->create_stream();
  auto staged = backend->create_event();
  auto copied = backend->create_event();
  for (int k = 0; k < sets; ++k) {
    SCOPED_TRACE("input set " + std::to_string(k));
    const Ciphertext new_a = gpu.upload_ciphertext(host_a[k]);
    const Ciphertext new_b = gpu.upload_ciphertext(host_b[k]);
    if (k % 2 == 0) {
      backend->copy(*a.buffer, *new_a.buffer, bytes, nullptr);
      backend->copy(*b.buffer, *new_b.buffer, bytes, nullptr);
    } else {  // on a side stream, ordered by events both ways
      backend->record_event(*staged, nullptr);
      backend->wait_event(side.get(), *staged);
      backend->copy(*a.buffer, *new_a.buffer, bytes, side.get());
      backend->copy(*b.buffer, *new_b.buffer, bytes, side.get());
      backend->record_event(*copied, side.get());
      backend->wait_event(nullptr, *copied);
    }
    recording->launch();
    const std::vector<HostValue> replayed = download_all(gpu, captured);
    const std::vector<HostValue> eager = download_all(gpu, schedule(gpu, new_a, new_b, gpu_rk, gpu_gk));
    const std::vector<HostValue> reference = download_all(
        cpu, schedule(cpu, cpu.upload_ciphertext(host_a[k]), cpu.upload_ciphertext(host_b[k]), cpu_rk, cpu_gk));
    expect_same(eager, replayed, "replay vs eager CUDA");
    expect_same(reference, replayed, "replay vs CPU");
  }

  // Two replays in a row give the same outputs (nothing depends on the previous replay).
  recording->launch();
  recording->launch();
  const std::vector<HostValue> last = download_all(gpu, captured);
  {
    const std::vector<HostValue> reference =
        download_all(cpu, schedule(cpu, cpu.upload_ciphertext(host_a[sets - 1]),
                                   cpu.upload_ciphertext(host_b[sets - 1]), cpu_rk, cpu_gk));
    expect_same(reference, last, "repeated replay vs CPU");
  }
  // The outputs outlive the recording (its arena is shared with them).
  recording.reset();
  expect_same(last, download_all(gpu, captured), "outputs after the recording is gone");
  captured.clear();
  backend->synchronize();
}

TEST(CudaCapture, ReplayedScheduleMatchesEagerCudaAndCpuBitForBit) {
  REQUIRE_GPU();
  expect_replays_bit_for_bit(small_params(12, 4, 2), 7);
}

// A context used only eagerly holds one key-switching lane's workspace; the
// first capture adds the other lanes' before it starts, later ones nothing.
// Both word families.
TEST(CudaCapture, CaptureLanesAreAllocatedWhenTheFirstCaptureBegins) {
  REQUIRE_GPU();
  for (const CkksParameters& params : {small_params(12, 4, 2), small_int32_params(12)}) {
    SCOPED_TRACE("word bits: " + std::to_string(params.word_size == WordSize::bits32 ? 32 : 64));
    World w(params, 12);
    Backend& backend = *w.gpu_backend;
    const Ciphertext a = w.gpu.upload_ciphertext(fresh(w));
    const Ciphertext b = w.gpu.upload_ciphertext(fresh(w));
    const Ciphertext eager_a = w.gpu.multiply_relinearize(a, a, w.gpu_rk);
    const Ciphertext eager_b = w.gpu.multiply_relinearize(b, b, w.gpu_rk);
    // The pool counts an allocation when it is made (synchronize is refused during a capture).
    const auto used = [&] { return backend.memory_usage().current_bytes; };
    backend.synchronize();
    const std::size_t before = used();
    backend.begin_capture();
    const std::size_t first = used();
    // Two independent key switches: the second runs on lane 1, in the new workspace.
    Ciphertext captured_a = w.gpu.multiply_relinearize(a, a, w.gpu_rk);
    Ciphertext captured_b = w.gpu.multiply_relinearize(b, b, w.gpu_rk);
    std::unique_ptr<Recording> recording = backend.end_capture();
    recording->launch();
    EXPECT_EQ(w.gpu.download(captured_a).data, w.gpu.download(eager_a).data);
    EXPECT_EQ(w.gpu.download(captured_b).data, w.gpu.download(eager_b).data);
    captured_a = Ciphertext{};
    captured_b = Ciphertext{};
    recording.reset();
    backend.synchronize();
    const std::size_t after = used();
    backend.begin_capture();
    const std::size_t second = used();
    backend.end_capture();
    // A lane's workspace holds at least the top level's extended digits.
    const std::size_t extended_bytes = static_cast<std::size_t>(w.context->key_digits()) * w.context->key_limbs() *
                                       w.n() * stored_word_bytes(params.word_size);
    EXPECT_GE(first, before + extended_bytes);
    EXPECT_EQ(second, after);
  }
}

// The 32-bit word family: its key switches (several kernels and copies),
// rescales by several primes and ModRaise of a two-prime level 0 inside one
// graph.
TEST(CudaCapture, The32BitWordFamilyReplaysBitForBit) {
  REQUIRE_GPU();
  expect_replays_bit_for_bit(small_int32_params(12), 8);
}

// Wide: eight independent chains whose temporaries are dropped as soon as
// they are read, so later, unrelated operations reuse their blocks (writes
// after reads on other capture lanes); a pairwise sum; four independent
// rotations, side by side on the two key-switching lanes, each lane's
// workspace used by two of them in turn.
std::vector<Ciphertext> wide_schedule(const Engine& e, const Ciphertext& a, const Ciphertext& b,
                                      const GaloisKeys& gk) {
  std::vector<Ciphertext> terms;
  for (int i = 0; i < 8; ++i) {
    Ciphertext t = e.add_scalar(i % 2 ? a : b, 0.125 * i);
    for (int k = 0; k < i % 3 + 1; ++k) t = e.sub(e.add(t, a), e.negate(b));
    terms.push_back(std::move(t));
  }
  while (terms.size() > 1) {
    std::vector<Ciphertext> next;
    for (std::size_t i = 0; i < terms.size(); i += 2) next.push_back(e.add(terms[i], terms[i + 1]));
    terms = std::move(next);
  }
  std::vector<Ciphertext> out{terms[0], e.rotate(a, 1, gk), e.rotate(b, -3, gk), e.rotate(b, 1, gk),
                              e.rotate(a, -3, gk)};
  out.push_back(e.add(out[1], out[2]));
  out.push_back(e.add(out[3], out[4]));
  return out;
}

TEST(CudaCapture, AWideScheduleOnCaptureLanesReplaysBitForBit) {
  REQUIRE_GPU();
  World w(small_params(13, 4, 2), 11);
  Engine& gpu = w.gpu;
  const Ciphertext a = gpu.upload_ciphertext(fresh(w));
  const Ciphertext b = gpu.upload_ciphertext(fresh(w));
  const std::shared_ptr<Backend>& backend = w.gpu_backend;
  backend->begin_capture();
  const std::vector<Ciphertext> captured = wide_schedule(gpu, a, b, w.gpu_gk);
  // A copy is placed like an operation: after the rotation it reads.
  const std::shared_ptr<Buffer> copied = backend->allocate(captured[1].buffer->size_bytes());
  backend->copy(*copied, *captured[1].buffer, captured[1].buffer->size_bytes(), nullptr);
  const std::unique_ptr<Recording> recording = backend->end_capture();
  // The eight chains start side by side (one root when recorded as a chain).
  EXPECT_GT(cuda::graph_root_count(*recording), 1u);
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("input set " + std::to_string(k));
    const HostValue host_a = fresh(w);
    const HostValue host_b = fresh(w);
    backend->copy(*a.buffer, *gpu.upload_ciphertext(host_a).buffer, a.buffer->size_bytes(), nullptr);
    backend->copy(*b.buffer, *gpu.upload_ciphertext(host_b).buffer, b.buffer->size_bytes(), nullptr);
    recording->launch();
    const std::vector<HostValue> replayed = download_all(gpu, captured);
    Ciphertext copy_of_rotation = captured[1];
    copy_of_rotation.buffer = copied;
    expect_same({replayed[1]}, download_all(gpu, {copy_of_rotation}), "the copy recorded after the rotation");
    expect_same(download_all(gpu, wide_schedule(gpu, a, b, w.gpu_gk)), replayed, "replay vs eager CUDA");
    expect_same(download_all(w.cpu, wide_schedule(w.cpu, w.cpu.upload_ciphertext(host_a),
                                                  w.cpu.upload_ciphertext(host_b), w.cpu_gk)),
                replayed, "replay vs CPU");
  }
}

void expect_refused(const char* call, const std::function<void()>& f) {
  SCOPED_TRACE(std::string(call) + " during capture");
  expect_contains(error_of<StateError>(f), {call, "not allowed during capture (host I/O / synchronization)"});
}

TEST(CudaCapture, HostCallsAreRefusedAndAFailedCaptureLeavesTheBackendUsable) {
  REQUIRE_GPU();
  const auto context = Context::create(small_params(12, 2, 1));
  auto backend = cuda::make_cuda_backend();
  auto cpu_backend = cpu::make_cpu_backend();
  const auto ctx = backend->prepare(context);
  const auto cpu_ctx = cpu_backend->prepare(context);
  const std::size_t n = context->ring_degree();
  const std::size_t words = 2 * 3 * n;
  std::vector<u64> host(words);
  std::mt19937_64 gen(5);
  for (std::size_t i = 0; i < words; ++i) host[i] = gen() % context->q()[(i / n) % 3].value;
  auto x = backend->allocate(words * sizeof(u64));
  backend->upload(*x, host.data(), words * sizeof(u64));
  auto cx = cpu_backend->allocate(words * sizeof(u64));
  cpu_backend->upload(*cx, host.data(), words * sizeof(u64));
  const PolyArg arg{x.get(), 2, 3};
  auto stream = backend->create_stream();
  auto event = backend->create_event();
  std::vector<u64> sink(words);

  EXPECT_THROW(backend->end_capture(), StateError);  // none in progress
  backend->begin_capture();
  auto out = backend->allocate(words * sizeof(u64));
  const PolyArg out_arg{out.get(), 2, 3};
  backend->add(*ctx, out_arg, arg, arg);
  expect_refused("upload", [&] { backend->upload(*x, host.data(), words * sizeof(u64)); });
  expect_refused("download", [&] { backend->download(*x, sink.data(), words * sizeof(u64)); });
  expect_refused("synchronize", [&] { backend->synchronize(); });
  expect_refused("prepare", [&] { backend->prepare(Context::create(small_params(12, 3, 1))); });
  expect_refused("create_stream", [&] { backend->create_stream(); });
  expect_refused("create_event", [&] { backend->create_event(); });
  expect_refused("create_timing_event", [&] { backend->create_timing_event(); });
  expect_refused("elapsed_seconds", [&] { backend->elapsed_seconds(*event, *event); });
  expect_refused("record_event", [&] { backend->record_event(*event, nullptr); });
  expect_refused("wait_event", [&] { backend->wait_event(stream.get(), *event); });
  expect_refused("synchronize_event", [&] { backend->synchronize_event(*event); });
  EXPECT_THROW(backend->begin_capture(), StateError);
  EXPECT_TRUE(backend->capturing()) << "a refused call ends no capture";
  backend->multiply_constant(*ctx, out_arg, out_arg, std::vector<u64>{3, 5, 7});
  auto recording = backend->end_capture();
  EXPECT_GE(recording->operation_count(), 2u);

  // Replaying is refused during another capture; a failing operation ends
  // the capture and discards its graph, and end_capture says why.
  backend->begin_capture();
  expect_refused("Recording::launch", [&] { recording->launch(); });
  EXPECT_THROW(backend->add(*ctx, PolyArg{out.get(), 2, 9}, arg, arg), BackendError);
  EXPECT_FALSE(backend->capturing());
  expect_contains(error_of<BackendError>([&] { backend->end_capture(); }), {"add failed during the capture"});
  EXPECT_THROW(backend->end_capture(), StateError);
  backend->begin_capture();
  EXPECT_THROW(backend->add(*cpu_ctx, out_arg, arg, arg), BackendError);  // a foreign context
  EXPECT_FALSE(backend->capturing());
  // A failure after the capture has forked its lanes (two independent
  // operations: two lanes) joins them and ends the capture the same way.
  backend->begin_capture();
  auto spare = backend->allocate(words * sizeof(u64));
  backend->add(*ctx, out_arg, arg, arg);
  backend->negate(*ctx, PolyArg{spare.get(), 2, 3}, arg);
  EXPECT_THROW(backend->multiply_constant(*ctx, PolyArg{spare.get(), 2, 9}, arg, std::vector<u64>{3, 5, 7}),
               BackendError);
  EXPECT_FALSE(backend->capturing());
  expect_contains(error_of<BackendError>([&] { backend->end_capture(); }),
                  {"multiply_constant failed during the capture"});

  // Still usable: the first recording replays (into its arena buffer), eager
  // work and a new capture run, all equal to the CPU backend's results.
  auto cout = cpu_backend->allocate(words * sizeof(u64));
  const PolyArg cout_arg{cout.get(), 2, 3};
  cpu_backend->add(*cpu_ctx, cout_arg, PolyArg{cx.get(), 2, 3}, PolyArg{cx.get(), 2, 3});
  cpu_backend->multiply_constant(*cpu_ctx, cout_arg, cout_arg, std::vector<u64>{3, 5, 7});
  std::vector<u64> expected(words), actual(words);
  cpu_backend->download(*cout, expected.data(), words * sizeof(u64));
  recording->launch();
  backend->download(*out, actual.data(), words * sizeof(u64));
  EXPECT_TRUE(expected == actual) << "replay after a failed capture";

  backend->begin_capture();
  auto negated = backend->allocate(words * sizeof(u64));
  backend->negate(*ctx, PolyArg{negated.get(), 2, 3}, arg);
  auto second = backend->end_capture();
  second->launch();
  backend->download(*negated, actual.data(), words * sizeof(u64));
  cpu_backend->negate(*cpu_ctx, cout_arg, PolyArg{cx.get(), 2, 3});
  cpu_backend->download(*cout, expected.data(), words * sizeof(u64));
  EXPECT_TRUE(expected == actual) << "a new capture after a failed one";
  backend->add(*ctx, out_arg, arg, arg);  // eager
  backend->download(*out, actual.data(), words * sizeof(u64));
  cpu_backend->add(*cpu_ctx, cout_arg, PolyArg{cx.get(), 2, 3}, PolyArg{cx.get(), 2, 3});
  cpu_backend->download(*cout, expected.data(), words * sizeof(u64));
  EXPECT_TRUE(expected == actual) << "an eager operation after a failed capture";
}

// x + k y mod q without overflow (q < 2^62).
u64 add_multiple(u64 x, u64 y, unsigned k, u64 q) {
  u64 r = 0;
  for (int bit = 31; bit >= 0; --bit) {
    r = r >= q - r ? r - (q - r) : r + r;
    if ((k >> bit) & 1) r = r >= q - y ? r - (q - y) : r + y;
  }
  return x >= q - r ? x - (q - r) : x + r;
}

TEST(CudaStreams, CopyOnAStreamWaitingForAnEventSeesTheFinalData) {
  REQUIRE_GPU();
  const auto context = Context::create(small_params(15, 7, 1));
  auto backend = cuda::make_cuda_backend();
  const auto ctx = backend->prepare(context);
  const std::size_t n = context->ring_degree();
  constexpr int limbs = 8;
  constexpr unsigned rounds = 400;
  const std::size_t words = 2 * limbs * n;
  const std::size_t bytes = words * sizeof(u64);
  std::vector<u64> hx(words), hy(words), expected(words);
  std::mt19937_64 gen(11);
  for (std::size_t i = 0; i < words; ++i) {
    const u64 q = context->q()[(i / n) % limbs].value;
    hx[i] = gen() % q;
    hy[i] = gen() % q;
    expected[i] = add_multiple(hx[i], hy[i], rounds, q);
  }
  auto x = backend->allocate(bytes);
  auto y = backend->allocate(bytes);
  auto copy = backend->allocate(bytes);
  backend->upload(*x, hx.data(), bytes);
  backend->upload(*y, hy.data(), bytes);
  auto stream = backend->create_stream();
  auto done_on_main = backend->create_event();
  auto copied = backend->create_event();
  backend->synchronize();

  // A long sequence on the backend's stream, timed by its events; the host
  // runs ahead of it.
  auto started = backend->create_timing_event();
  auto finished = backend->create_timing_event();
  const auto host_start = std::chrono::steady_clock::now();
  backend->record_event(*started, nullptr);
  const PolyArg xa{x.get(), 2, limbs};
  for (unsigned r = 0; r < rounds; ++r) backend->add(*ctx, xa, xa, PolyArg{y.get(), 2, limbs});
  backend->record_event(*finished, nullptr);
  backend->record_event(*done_on_main, nullptr);
  const double device_seconds = backend->elapsed_seconds(*started, *finished);
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  EXPECT_GT(device_seconds, 0.0);
  EXPECT_LE(device_seconds, host_seconds);
  expect_contains(error_of<InvalidArgumentError>([&] { backend->elapsed_seconds(*done_on_main, *finished); }),
                  {"elapsed_seconds", "create_timing_event"});
  backend->wait_event(stream.get(), *done_on_main);
  backend->copy(*copy, *x, bytes, stream.get());
  backend->record_event(*copied, stream.get());
  backend->synchronize_event(*copied);
  std::vector<u64> actual(words);
  backend->download(*copy, actual.data(), bytes);
  EXPECT_TRUE(expected == actual) << "the copy did not see the final data";

  // Streams and events of another backend kind are refused.
  auto cpu_backend = cpu::make_cpu_backend();
  auto foreign_event = cpu_backend->create_event();
  auto foreign_stream = cpu_backend->create_stream();
  EXPECT_THROW(backend->record_event(*foreign_event, nullptr), InvalidArgumentError);
  EXPECT_THROW(backend->wait_event(nullptr, *foreign_event), InvalidArgumentError);
  EXPECT_THROW(backend->record_event(*copied, foreign_stream.get()), InvalidArgumentError);
  EXPECT_THROW(backend->copy(*copy, *x, bytes, foreign_stream.get()), InvalidArgumentError);
  EXPECT_THROW(backend->copy(*copy, *x, bytes + 8, nullptr), BackendError);
}

TEST(CudaMemory, UsageGrowsWithAllocationsAndCaptures) {
  REQUIRE_GPU();
  constexpr std::size_t mib = std::size_t{1} << 20;
  auto backend = cuda::make_cuda_backend();
  const MemoryUsage m0 = backend->memory_usage();
  auto big = backend->allocate(64 * mib);
  const MemoryUsage m1 = backend->memory_usage();
  EXPECT_GE(m1.current_bytes, m0.current_bytes + 64 * mib);
  EXPECT_GE(m1.peak_bytes, m1.current_bytes);

  // During a capture: arena blocks count, and pool memory released meanwhile
  // is held by the recording.
  auto early = backend->allocate(16 * mib);
  backend->begin_capture();
  auto captured = backend->allocate(32 * mib);
  early.reset();
  const MemoryUsage m2 = backend->memory_usage();
  EXPECT_GE(m2.current_bytes, m1.current_bytes + 32 * mib);
  auto recording = backend->end_capture();
  EXPECT_EQ(recording->operation_count(), 0u);
  EXPECT_GE(recording->memory_bytes(), 48 * mib);
  recording->launch();  // nothing recorded: a no-op
  captured.reset();
  recording.reset();
  backend->synchronize();
  const MemoryUsage m3 = backend->memory_usage();
  EXPECT_LE(m3.current_bytes + 32 * mib, m2.current_bytes);
  EXPECT_GE(m3.peak_bytes, m2.peak_bytes);
}

}  // namespace
}  // namespace fhelium::test
