// The STREAMS extension (ABI 1.1) across the plugin boundary: capture and
// replay of Engine operations, refusals during capture, streams and events,
// timing events (ABI 1.5), copies and memory usage on the cpu plugin loaded by
// name; and plugins of ABI 1.0 (no extension) and 1.4 (no timing events) that
// fall back to the Backend defaults.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "expectations.hpp"
#include "fhelium/plugins/loader.hpp"
#include "fhelium/sparse_encapsulation.hpp"
#include "helpers.hpp"
#include "test_plugins.hpp"

namespace fhelium::test {
namespace {

const std::vector<long> steps{1, -2};

// A few op families, with temporaries released along the way.
std::vector<Ciphertext> schedule(const Engine& e, const Ciphertext& a, const Ciphertext& b, const RelinKey& rk,
                                 const GaloisKeys& gk) {
  std::vector<Ciphertext> out;
  const Ciphertext scaled = e.rescale(e.relinearize(e.multiply(e.add(a, b), b), rk));
  out.push_back(scaled);
  out.push_back(e.rotate(scaled, 1, gk));
  for (Ciphertext& r : e.rotate_hoisted(scaled, steps, gk)) out.push_back(std::move(r));
  Ciphertext acc = e.add_scalar(a, 0.25);
  for (int i = 0; i < 2; ++i) acc = e.sub(e.add(acc, b), a);
  const Ciphertext coefficients = e.to_coefficient(e.multiply_scalar(acc, -1.5, std::ldexp(1.0, 20)));
  out.push_back(coefficients);
  out.push_back(e.to_ntt(coefficients));
  out.push_back(e.negate(e.drop_to_level(scaled, 0)));
  return out;
}


TEST(PluginStreams, CapturedEngineOpsReplayOnCopiedInputsLikeEagerExecution) {
  Fixture f(small_params(12, 2));
  auto backend = load_backend("cpu");
  ASSERT_TRUE(backend->supports_capture());
  EXPECT_FALSE(backend->capturing());
  Engine e(f.context, backend);
  const HostSwitchKey relin = f.keygen.relinearization_key(f.sk);
  std::vector<HostSwitchKey> galois;
  for (long s : steps) galois.push_back(f.keygen.galois_key(f.sk, f.context->galois_element(s)));
  const RelinKey rk = e.upload_relinearization_key(relin);
  const GaloisKeys gk = e.upload_galois_keys(galois);
  const RelinKey ref_rk = f.engine.upload_relinearization_key(relin);
  const GaloisKeys ref_gk = f.engine.upload_galois_keys(galois);

  constexpr int sets = 3;
  std::vector<HostValue> host_a, host_b;
  for (int k = 0; k < sets; ++k) {
    host_a.push_back(f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk));
    host_b.push_back(f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk));
  }

  // Stable inputs; the capture records the schedule without running it.
  const Ciphertext a = e.upload_ciphertext(host_a[0]);
  const Ciphertext b = e.upload_ciphertext(host_b[0]);
  backend->begin_capture();
  EXPECT_TRUE(backend->capturing());
  const std::vector<Ciphertext> captured = schedule(e, a, b, rk, gk);
  std::unique_ptr<Recording> recording = backend->end_capture();
  EXPECT_FALSE(backend->capturing());
  ASSERT_NE(recording, nullptr);
  EXPECT_GT(recording->operation_count(), 10u);
  EXPECT_GT(recording->memory_bytes(), 0u);

  const std::size_t bytes = a.buffer->size_bytes();
  for (int k = 0; k < sets; ++k) {
    SCOPED_TRACE("input set " + std::to_string(k));
    const Ciphertext new_a = e.upload_ciphertext(host_a[k]);
    const Ciphertext new_b = e.upload_ciphertext(host_b[k]);
    backend->copy(*a.buffer, *new_a.buffer, bytes, nullptr);
    backend->copy(*b.buffer, *new_b.buffer, bytes, nullptr);
    recording->launch();
    const std::vector<HostValue> replayed = download_all(e, captured);
    expect_same(download_all(e, schedule(e, new_a, new_b, rk, gk)), replayed, "replay vs eager (plugin)");
    expect_same(download_all(f.engine, schedule(f.engine, f.engine.upload_ciphertext(host_a[k]),
                                                f.engine.upload_ciphertext(host_b[k]), ref_rk, ref_gk)),
                replayed, "replay vs eager (in-process CPU backend)");
  }
  // Two replays in a row give the same outputs.
  const std::vector<HostValue> last = download_all(e, captured);
  recording->launch();
  recording->launch();
  expect_same(last, download_all(e, captured), "repeated replay");
}

TEST(PluginStreams, UploadDuringCaptureIsRefusedAndTheBackendStaysUsable) {
  Fixture f(small_params(11, 1));
  auto backend = load_backend("cpu");
  Engine e(f.context, backend);
  const HostValue host = f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 1, f.scale()), f.pk);
  const Ciphertext a = e.upload_ciphertext(host);

  EXPECT_THROW(backend->end_capture(), StateError);  // none in progress
  backend->begin_capture();
  const Ciphertext doubled = e.add(a, a);
  expect_contains(error_of<StateError>([&] { e.upload_ciphertext(host); }),
                  {"cpu backend", "upload", "not allowed during capture"});
  expect_contains(error_of<StateError>([&] { e.download(a); }), {"download", "not allowed during capture"});
  expect_contains(error_of<StateError>([&] { backend->synchronize(); }), {"synchronize", "not allowed during capture"});
  EXPECT_THROW(backend->create_stream(), StateError);
  EXPECT_THROW(backend->create_event(), StateError);
  EXPECT_THROW(backend->begin_capture(), StateError);
  EXPECT_TRUE(backend->capturing()) << "a refused call ends no capture";
  const Ciphertext negated = e.negate(doubled);
  auto recording = backend->end_capture();
  EXPECT_FALSE(backend->capturing());
  EXPECT_EQ(recording->operation_count(), 2u);
  EXPECT_THROW(backend->end_capture(), StateError);

  // Eager work, uploads and the replay all run afterwards.
  const Ciphertext b = e.upload_ciphertext(host);
  const Ciphertext ref = f.engine.upload_ciphertext(host);
  EXPECT_EQ(e.download(e.add(b, b)).data, f.engine.download(f.engine.add(ref, ref)).data);
  recording->launch();
  EXPECT_EQ(e.download(negated).data, f.engine.download(f.engine.negate(f.engine.add(ref, ref))).data);
  backend->synchronize();
}

TEST(PluginStreams, CopyOnAStreamOrderedByEvents) {
  auto backend = load_backend("cpu");
  constexpr std::size_t words = 4096;
  constexpr std::size_t bytes = words * sizeof(u64);
  std::vector<u64> host(words);
  std::mt19937_64 gen(3);
  for (auto& x : host) x = gen();
  auto src = backend->allocate(bytes);
  auto mid = backend->allocate(bytes);
  auto dst = backend->allocate(bytes);
  backend->upload(*src, host.data(), bytes);

  auto stream = backend->create_stream();
  auto staged = backend->create_event();
  auto copied = backend->create_event();
  ASSERT_NE(stream, nullptr);
  ASSERT_NE(staged, nullptr);
  backend->synchronize_event(*copied);  // never recorded: complete
  backend->record_event(*staged, nullptr);
  backend->wait_event(stream.get(), *staged);
  backend->copy(*mid, *src, bytes, stream.get());
  backend->record_event(*copied, stream.get());
  backend->synchronize_event(*copied);
  std::vector<u64> actual(words);
  backend->download(*mid, actual.data(), bytes);
  EXPECT_TRUE(actual == host) << "copy on a side stream";

  backend->wait_event(nullptr, *copied);
  backend->copy(*dst, *mid, bytes, nullptr);
  std::fill(actual.begin(), actual.end(), 0);
  backend->download(*dst, actual.data(), bytes);
  EXPECT_TRUE(actual == host) << "copy on the backend stream";

  // Streams, events and buffers of another backend are refused.
  auto other = load_backend("cpu");
  auto in_process = cpu::make_cpu_backend();
  auto other_stream = other->create_stream();
  auto other_event = other->create_event();
  auto foreign_event = in_process->create_event();
  auto foreign_stream = in_process->create_stream();
  EXPECT_THROW(backend->record_event(*other_event, nullptr), InvalidArgumentError);
  EXPECT_THROW(backend->record_event(*foreign_event, nullptr), InvalidArgumentError);
  EXPECT_THROW(backend->wait_event(nullptr, *foreign_event), InvalidArgumentError);
  EXPECT_THROW(backend->synchronize_event(*other_event), InvalidArgumentError);
  EXPECT_THROW(backend->record_event(*copied, foreign_stream.get()), InvalidArgumentError);
  EXPECT_THROW(backend->copy(*dst, *src, bytes, other_stream.get()), InvalidArgumentError);
  auto foreign_buffer = in_process->allocate(bytes);
  EXPECT_THROW(backend->copy(*dst, *foreign_buffer, bytes, nullptr), InvalidArgumentError);
  EXPECT_THROW(backend->copy(*foreign_buffer, *src, bytes, stream.get()), InvalidArgumentError);
}

// Times `work` with timing events on `stream`; checks the measured time lies
// within the host clock's time around the whole sequence.
double timed_by_events(Backend& backend, Stream* stream, const std::function<void()>& work) {
  auto start = backend.create_timing_event();
  auto end = backend.create_timing_event();
  const auto host_start = std::chrono::steady_clock::now();
  backend.record_event(*start, stream);
  work();
  backend.record_event(*end, stream);
  const double seconds = backend.elapsed_seconds(*start, *end);
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  EXPECT_GE(seconds, 0.0);
  EXPECT_LE(seconds, host);
  return seconds;
}

// Engine work that takes a few milliseconds on one thread.
void some_rotations(Fixture& f, const std::shared_ptr<Backend>& backend) {
  Engine e(f.context, backend);
  const std::vector<HostSwitchKey> keys{f.keygen.galois_key(f.sk, f.context->galois_element(1))};
  const GaloisKeys gk = e.upload_galois_keys(keys);
  const Ciphertext a =
      e.upload_ciphertext(f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk));
  const double seconds = timed_by_events(*backend, nullptr, [&] {
    Ciphertext r = a;
    for (int i = 0; i < 8; ++i) r = e.rotate(r, 1, gk);
  });
  EXPECT_GT(seconds, 0.0) << "eight rotations took no time";
}

TEST(PluginStreams, TimingEventsTimeTheBackendsWork) {
  Fixture f(small_params(12, 2));
  auto backend = load_backend("cpu");
  some_rotations(f, backend);

  // On a side stream the end event is stamped when the copy has run.
  constexpr std::size_t bytes = std::size_t{8} << 20;
  auto src = backend->allocate(bytes);
  auto dst = backend->allocate(bytes);
  auto stream = backend->create_stream();
  const double copy_seconds =
      timed_by_events(*backend, stream.get(), [&] { backend->copy(*dst, *src, bytes, stream.get()); });
  EXPECT_GT(copy_seconds, 0.0);

  // Events that cannot time, unrecorded ones and another backend's are refused.
  auto plain = backend->create_event();
  auto timing = backend->create_timing_event();
  auto unrecorded = backend->create_timing_event();
  backend->record_event(*timing, nullptr);
  backend->record_event(*plain, nullptr);
  expect_contains(error_of<InvalidArgumentError>([&] { backend->elapsed_seconds(*plain, *timing); }),
                  {"elapsed_seconds", "start", "create_timing_event"});
  expect_contains(error_of<StateError>([&] { backend->elapsed_seconds(*timing, *unrecorded); }),
                  {"elapsed_seconds", "end", "not been recorded"});
  auto other = load_backend("cpu");
  auto other_event = other->create_timing_event();
  other->record_event(*other_event, nullptr);
  EXPECT_THROW(backend->elapsed_seconds(*timing, *other_event), InvalidArgumentError);
}

TEST(PluginStreams, PluginsBeforeAbi15TimeWithTheHostClock) {
  for (const char* name : {"abi10", "abi14"}) {
    SCOPED_TRACE(name);
    Fixture f(small_params(12, 2));
    auto backend = load_backend(plugin(name, name));
    EXPECT_EQ(backend->supports_capture(), std::string(name) == "abi14") << "the 1.4 STREAMS extension is found";
    const auto event = backend->create_timing_event();
    EXPECT_NE(dynamic_cast<HostClockEvent*>(event.get()), nullptr);
    backend->record_event(*event, nullptr);
    backend->wait_event(nullptr, *event);  // waits and synchronizes through the defaults
    backend->synchronize_event(*event);
    some_rotations(f, backend);
  }
}

// A 32-bit context's buffers hold 4-byte residues since ABI 1.6: an older
// plugin would read them as 8-byte words, so it is refused by name.
TEST(PluginStreams, PluginsBeforeAbi16RefuseThe32BitFamily) {
  const auto context = Context::create(small_int32_params(12));
  auto old = load_backend(plugin("abi14", "abi14"));
  expect_contains(error_of<BackendError>([&] { old->prepare(context); }),
                  {"abi14", "ABI 1.4", "4-byte residues", "1.6"});
  EXPECT_NE(load_backend("cpu")->prepare(context), nullptr);
}

// Wide levels (ABI 1.8) reach the plugin: a rescale from a wide level and a
// ModRaise from level 0's two primes have the in-process cpu's residues.
TEST(PluginStreams, WideLevelsReachThePlugin) {
  CkksParameters p = small_int32_params(11);
  p.wide_levels = 1;
  p.q_bits.insert(p.q_bits.end(), 2, 30);
  Fixture f(p);
  const int top = f.context->max_level();
  const HostValue x = f.engine.download(f.encrypt(f.random_message(1.0), top, f.context->rescale_divisor(top)));
  const auto run_on = [&](const Engine& e) {
    const Ciphertext c = e.upload_ciphertext(x);
    return std::pair{e.download(e.rescale(c)).data, e.download(e.mod_raise(e.drop_to_level(c, 0))).data};
  };
  const Engine plugin(f.context, load_backend("cpu"));
  EXPECT_TRUE(run_on(plugin) == run_on(f.engine));
}

// A plugin of ABI 1.7 takes 32-bit contexts but neither wide levels nor a
// chain of level 0 only (refused by name), and the host lifts a two-prime
// level 0 for it (its own ModRaise would fail).
TEST(PluginStreams, PluginsBeforeAbi18RefuseWideLevelsAndGetTheHostsModRaise) {
  CkksParameters wide = small_int32_params(11);
  wide.wide_levels = 1;
  wide.q_bits.insert(wide.q_bits.end(), 2, 30);
  const auto wide_context = Context::create(wide);
  auto old = load_backend(plugin("abi17", "abi17"));
  expect_contains(error_of<BackendError>([&] { old->prepare(wide_context); }),
                  {"abi17", "ABI 1.7", "wide levels", "1.8"});
  expect_contains(error_of<BackendError>([&] { old->prepare(encapsulation_low_context(*wide_context)); }),
                  {"abi17", "level-0-only", "2 q primes"});
  Fixture f(small_int32_params(11));
  const Engine engine(f.context, old);
  const HostValue x = f.engine.download(f.engine.drop_to_level(f.encrypt(f.random_message(1.0), 1), 0));
  EXPECT_EQ(engine.download(engine.mod_raise(engine.upload_ciphertext(x))).data,
            f.engine.download(f.engine.mod_raise(f.engine.upload_ciphertext(x))).data);
}

TEST(PluginStreams, MemoryUsageGrowsWithAllocations) {
  auto backend = load_backend("cpu");
  constexpr std::size_t mib = std::size_t{1} << 20;
  const MemoryUsage m0 = backend->memory_usage();
  auto big = backend->allocate(8 * mib);
  const MemoryUsage m1 = backend->memory_usage();
  EXPECT_GE(m1.current_bytes, m0.current_bytes + 8 * mib);
  EXPECT_GE(m1.peak_bytes, m1.current_bytes);
  big.reset();
  const MemoryUsage m2 = backend->memory_usage();
  EXPECT_LT(m2.current_bytes, m1.current_bytes);
  EXPECT_GE(m2.peak_bytes, m1.peak_bytes);
}

TEST(PluginStreams, RecordingKeepsTheLibraryLoaded) {
  const auto path = plugin("future", "future");
  std::unique_ptr<Recording> recording;
  {
    auto backend = load_backend(path);
    ASSERT_TRUE(backend->supports_capture());
    backend->begin_capture();
    recording = backend->end_capture();
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  if (handle) dlclose(handle);
  EXPECT_EQ(recording->operation_count(), 0u);
  recording->launch();
  recording.reset();  // recording_destroy runs inside the still-loaded plugin
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(handle, nullptr);
  if (handle) dlclose(handle);
}

TEST(PluginStreams, AnAbi10PluginLoadsWithTheDefaults) {
  const auto path = plugin("abi10", "abi10");
  Fixture f(small_params(11, 1));
  auto backend = load_backend(path);
  EXPECT_EQ(backend->name(), "abi10");
  EXPECT_FALSE(backend->supports_capture());
  EXPECT_FALSE(backend->capturing());
  expect_contains(error_of<BackendError>([&] { backend->begin_capture(); }),
                  {"abi10", "cannot capture", "ABI 1.0", "supports_capture() is false"});
  EXPECT_FALSE(backend->capturing());
  EXPECT_THROW(backend->end_capture(), StateError);
  EXPECT_EQ(backend->memory_usage().current_bytes, 0u);

  // Streams, events and copy still work through the defaults (synchronous,
  // through host memory), and so do the operations.
  Engine e(f.context, backend);
  const HostValue host = f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 1, f.scale()), f.pk);
  const Ciphertext a = e.upload_ciphertext(host);
  const Ciphertext b =
      e.upload_ciphertext(f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 1, f.scale()), f.pk));
  auto stream = backend->create_stream();
  auto event = backend->create_event();
  backend->copy(*b.buffer, *a.buffer, a.buffer->size_bytes(), stream.get());
  backend->record_event(*event, stream.get());
  backend->synchronize_event(*event);
  const Ciphertext ref = f.engine.upload_ciphertext(host);
  EXPECT_EQ(e.download(e.add(a, b)).data, f.engine.download(f.engine.add(ref, ref)).data);
  // A 1.0 table has no multiply_relinearize: the host runs the two calls.
  const auto relin = f.keygen.relinearization_key(f.sk);
  const Ciphertext fused = e.multiply_relinearize(a, a, e.upload_relinearization_key(relin));
  const RelinKey ref_rk = f.engine.upload_relinearization_key(relin);
  EXPECT_EQ(e.download(fused).data, f.engine.download(f.engine.relinearize(f.engine.multiply(ref, ref), ref_rk)).data);
  // Nor rotate_sum (ABI 1.13), which has no host fallback: the Engine refuses it, naming why.
  EXPECT_FALSE(backend->supports_rotate_sum());
  const std::vector<HostSwitchKey> galois = {f.keygen.galois_key(f.sk, f.context->galois_element(1))};
  const std::vector<Ciphertext> rotated = {a, b};
  const std::vector<long> by_one = {1, 1};
  expect_contains(error_of<BackendError>([&] { e.rotate_sum(rotated, by_one, e.upload_galois_keys(galois)); }),
                  {"rotate_sum", "abi10", "supports_rotate_sum() is false"});
  // Nor multiply_relinearize_rescale (ABI 1.12): the host runs multiply_relinearize and rescale.
  EXPECT_EQ(e.download(e.multiply_relinearize_rescale(a, a, e.upload_relinearization_key(relin))).data,
            f.engine.download(f.engine.rescale(f.engine.relinearize(f.engine.multiply(ref, ref), ref_rk))).data);
  // Nor sum_products (ABI 1.9): the host runs multiply_plain and add.
  const HostValue plain = f.encoder.encode(f.random_message(1.0), 1, f.scale());
  const Plaintext p = e.upload_plaintext(plain), ref_p = f.engine.upload_plaintext(plain);
  const std::vector<Ciphertext> terms = {a, b, a}, ref_terms = {ref, ref, ref};
  const std::vector<Plaintext> plains = {p, p, p}, ref_plains = {ref_p, ref_p, ref_p};
  EXPECT_EQ(e.download(e.multiply_plain_sum(terms, plains)).data,
            f.engine.download(f.engine.multiply_plain_sum(ref_terms, ref_plains)).data);
  EXPECT_EQ(e.download(e.sum(terms)).data, f.engine.download(f.engine.sum(ref_terms)).data);
  // Nor sum_constant_products (ABI 1.10): the host runs multiply_constant and sum_products.
  const std::vector<double> values = {0.5, -1.0, 2.0}, scales(3, f.scale());
  EXPECT_EQ(e.download(e.multiply_scalar_sum(terms, values, scales)).data,
            f.engine.download(f.engine.multiply_scalar_sum(ref_terms, values, scales)).data);
  // Nor sum_product_groups (ABI 1.11): the host runs sum_products per group.
  const std::vector<std::span<const Ciphertext>> groups = {terms, std::span(terms).first(1)},
                                                 ref_groups = {ref_terms, std::span(ref_terms).first(1)};
  const std::vector<std::span<const Plaintext>> group_plains = {plains, std::span(plains).first(1)},
                                                ref_group_plains = {ref_plains, std::span(ref_plains).first(1)};
  const std::vector<Ciphertext> sums = e.multiply_plain_sums(groups, group_plains),
                                ref_sums = f.engine.multiply_plain_sums(ref_groups, ref_group_plains);
  ASSERT_EQ(sums.size(), 2u);
  for (std::size_t g = 0; g < 2; ++g) EXPECT_EQ(e.download(sums[g]).data, f.engine.download(ref_sums[g]).data);
}

}  // namespace
}  // namespace fhelium::test
