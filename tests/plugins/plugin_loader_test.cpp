// The plugin boundary: loading by name and by path, the failure modes (each
// with the file and the reason in the message), lifetimes and the registry.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fhelium/plugins/loader.hpp"
#include "expectations.hpp"
#include "helpers.hpp"
#include "test_plugins.hpp"

namespace fhelium::test {
namespace {

namespace fs = std::filesystem;

// An Engine on `backend` with the fixture's keys; the host values come from `f`.
struct Twin {
  Engine engine;
  Twin(Fixture& f, std::shared_ptr<Backend> backend) : engine(f.context, std::move(backend)) {}
};

TEST(PluginLoader, LoadsCpuByNameAndMatchesTheInProcessBackend) {
  Fixture f(small_params(12, 2));
  Twin plugin_engine(f, load_backend("cpu"));
  EXPECT_EQ(plugin_engine.engine.backend().name(), "cpu");
  const auto host_a = f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk);
  const auto host_b = f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk);
  const auto relin = f.keygen.relinearization_key(f.sk);
  const auto rotation = f.keygen.galois_key(f.sk, f.context->galois_element(3));
  const auto run = [&](Engine& e) {
    const auto a = e.upload_ciphertext(host_a);
    const auto b = e.upload_ciphertext(host_b);
    const auto rk = e.upload_relinearization_key(relin);
    const auto gk = e.upload_galois_keys(std::span(&rotation, 1));
    return e.download(e.rotate(e.rescale(e.relinearize(e.multiply(e.add(a, b), b), rk)), 3, gk)).data;
  };
  EXPECT_EQ(run(plugin_engine.engine), run(f.engine));
  // multiply_relinearize through the plugin's table entry (ABI 1.2; the
  // throwing plugin's test shows the entry, not multiply + relinearize, is called).
  const auto product = [&](Engine& e, bool fused) {
    const auto a = e.upload_ciphertext(host_a);
    const auto b = e.upload_ciphertext(host_b);
    const auto rk = e.upload_relinearization_key(relin);
    return e.download(fused ? e.multiply_relinearize(a, b, rk) : e.relinearize(e.multiply(a, b), rk)).data;
  };
  EXPECT_EQ(product(plugin_engine.engine, true), product(f.engine, false));
  // rotate_sum through the plugin's table entry (ABI 1.13), after its probe.
  EXPECT_TRUE(plugin_engine.engine.backend().supports_rotate_sum());
  const auto sum = [&](Engine& e) {
    const std::vector<Ciphertext> terms = {e.upload_ciphertext(host_a), e.upload_ciphertext(host_b)};
    const std::vector<long> steps = {3, 3};
    return e.download(e.rotate_sum(terms, steps, e.upload_galois_keys(std::span(&rotation, 1)))).data;
  };
  EXPECT_EQ(sum(plugin_engine.engine), sum(f.engine));
}

TEST(PluginLoader, NotFoundListsWhereItLooked) {
  LoadOptions options;
  options.search_path = {"/nonexistent/fhelium-plugins"};
  const auto message = error_of<PluginError>([&] { load_backend("nosuch", options); });
  expect_contains(message, {"no backend plugin named 'nosuch'", "libfhelium-backend-nosuch.so",
                            "/nonexistent/fhelium-plugins", "FHELIUM_BACKEND_PATH"});
}

TEST(PluginLoader, MissingFileByPath) {
  expect_contains(error_of<PluginError>([&] { load_backend("/nonexistent/libfhelium-backend-x.so"); }),
                  {"/nonexistent/libfhelium-backend-x.so", "does not exist"});
}

TEST(PluginLoader, NotASharedLibrary) {
  const fs::path folder = fs::temp_directory_path() / ("fhelium-junk-" + std::to_string(::getpid()));
  fs::create_directories(folder);
  const fs::path junk = folder / "libfhelium-backend-junk.so";
  std::ofstream(junk) << "this is not an ELF file\n";
  expect_contains(error_of<PluginError>([&] { load_backend(junk.string()); }),
                  {junk.string(), "not a loadable shared library"});
  LoadOptions options;
  options.search_path = {folder.string()};
  expect_contains(error_of<PluginError>([&] { load_backend("junk", options); }), {junk.string()});
  // Listing reports the broken file instead of failing.
  bool listed = false;
  for (const auto& info : list_backends(options)) {
    if (info.path == junk.string()) listed = !info.error.empty();
  }
  EXPECT_TRUE(listed);
  fs::remove_all(folder);
}

TEST(PluginLoader, EntrySymbolMissing) {
  const auto path = plugin("noentry", "noentry");
  expect_contains(error_of<PluginError>([&] { load_backend(path); }),
                  {path, "does not export the entry symbol 'fhelium_backend_api'"});
}

TEST(PluginLoader, AbiMajorMismatchIsRefused) {
  const auto path = plugin("badmajor", "oldstyle");
  expect_contains(error_of<PluginError>([&] { load_backend(path); }),
                  {path, "uses plugin ABI 99.0, expected major version 1"});
}

TEST(PluginLoader, NewerMinorVersionLoads) {
  Fixture f(small_params(11, 1));
  Twin future(f, load_backend(plugin("future", "future")));
  const auto host = f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 1, f.scale()), f.pk);
  const auto a = future.engine.upload_ciphertext(host);
  const auto b = f.engine.upload_ciphertext(host);
  EXPECT_EQ(future.engine.download(future.engine.add(a, a)).data, f.engine.download(f.engine.add(b, b)).data);
}

TEST(PluginLoader, CreateFailureIsReported) {
  const auto path = plugin("failing", "failing");
  LoadOptions options;
  options.device = 3;
  expect_contains(error_of<PluginError>([&] { load_backend(path, options); }),
                  {path, "could not create a backend for device 3", "device 3 is not present"});
}

TEST(PluginLoader, CpuRefusesADeviceThatDoesNotExist) {
  LoadOptions options;
  options.device = 2;
  expect_contains(error_of<PluginError>([&] { load_backend("cpu", options); }), {"one device, index 0; got device 2"});
}

TEST(PluginLoader, ExceptionsInsideThePluginAreCaughtAtTheBoundary) {
  Fixture f(small_params(11, 1));
  Twin throwing(f, load_backend(plugin("throwing", "throwing")));
  const auto a = throwing.engine.upload_ciphertext(
      f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 1, f.scale()), f.pk));
  expect_contains(error_of<BackendError>([&] { throwing.engine.add(a, a); }), {"throwing backend", "boom inside add"});
  expect_contains(error_of<BackendError>([&] { throwing.engine.negate(a); }), {"unknown exception inside the plugin"});
  const RelinKey rk = throwing.engine.upload_relinearization_key(f.keygen.relinearization_key(f.sk));
  expect_contains(error_of<BackendError>([&] { throwing.engine.multiply_relinearize(a, a, rk); }),
                  {"multiply_relinearize", "boom inside multiply_relinearize"});
  // The backend stays usable.
  EXPECT_NO_THROW(throwing.engine.sub(a, a));
}

TEST(PluginLoader, TwoPluginsWithTheSameNameAreRefused) {
  LoadOptions options;
  options.search_path = {std::string(FHELIUM_TEST_PLUGIN_DIR) + "/twins"};
  expect_contains(error_of<PluginError>([&] { load_backend("twin", options); }),
                  {"two backend plugins are named 'twin'", "twin-a.so", "twin-b.so"});
}

TEST(PluginLoader, ObjectsKeepTheLibraryLoaded) {
  const auto path = plugin("future", "future");
  std::shared_ptr<Buffer> survivor;
  {
    auto backend = load_backend(path);
    survivor = backend->allocate(64);
  }
  // The backend object is gone; its buffer still holds the library.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  if (handle) dlclose(handle);
  survivor.reset();  // buffer_destroy runs inside the still-loaded plugin
  // With the last object gone the library is unloaded, so the check above can fail.
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(handle, nullptr);
  if (handle) dlclose(handle);
}

// The CPU plugin's OpenMP threads outlive its objects, so it is never
// unloaded (backends/cpu/CMakeLists.txt): unloaded, it crashed hosts at exit.
TEST(PluginLoader, CpuPluginStaysLoadedAfterItsLastObject) {
  std::string path;
  for (const auto& info : list_backends()) {
    if (info.name == "cpu") path = info.path;
  }
  ASSERT_FALSE(path.empty()) << "the cpu plugin is not on the search path";
  {
    Fixture f(small_params(12, 2));
    Engine engine(f.context, load_backend(path));
    const auto a =
        engine.upload_ciphertext(f.encryptor.encrypt(f.encoder.encode(f.random_message(1.0), 2, f.scale()), f.pk));
    engine.download(engine.multiply(a, a));  // runs OpenMP regions inside the plugin
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << path << " was unloaded after its last object";
  if (handle) dlclose(handle);
}

TEST(PluginLoader, ListsBackendsWithVersionsDevicesAndErrors) {
  LoadOptions options;
  options.search_path = {std::string(FHELIUM_TEST_PLUGIN_DIR) + "/failing"};
  bool saw_cpu = false;
  bool saw_failing = false;
  for (const auto& info : list_backends(options)) {
    if (info.name == "cpu") {
      saw_cpu = true;
      EXPECT_EQ(info.version, "0.1.0");
      EXPECT_EQ(info.abi_major, 1);
      ASSERT_FALSE(info.devices.empty());
      EXPECT_NE(info.devices[0].find("cpu:"), std::string::npos);
      EXPECT_TRUE(info.error.empty()) << info.error;
    }
    if (info.name == "failing") {
      saw_failing = true;
      EXPECT_NE(info.error.find("could not create"), std::string::npos) << info.error;
    }
  }
  EXPECT_TRUE(saw_cpu);
  EXPECT_TRUE(saw_failing);
}

}  // namespace
}  // namespace fhelium::test
