// Times loading a saved relinearization key and a saved ciphertext into the
// CUDA backend with load_*_file(path, engine) (read and checked in the pinned
// staging, until the device holds them) against the floor: the same file read
// into pinned memory and copied to the device with one cudaMemcpy. Beside it,
// the host path (load_*_file(path, context), then Engine::upload_*) and the
// seeded key. Files are uncompressed and read from a warm page cache; prints
// JSON (medians, minimums, runs, sizes, the ratio). Not a test.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>

#include "fhelium/cuda/cuda_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/serialization.hpp"

namespace {

using namespace fhelium;
namespace json = boost::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BackendError(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

json::object timed(int runs, const std::function<void()>& body) {
  body();  // warm the page cache, the allocator and the device
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return {{"median_ms", ms[ms.size() / 2]}, {"min_ms", ms.front()}, {"runs", runs}};
}

// The floor for one file: read into pinned memory, one copy to the device.
json::object pinned_copy(const std::string& path, int runs) {
  const std::size_t bytes = fs::file_size(path);
  void* host = nullptr;
  void* device = nullptr;
  check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  json::object out = timed(runs, [&] {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f || std::fread(host, 1, bytes, f) != bytes) throw IoError("cannot read '" + path + "'");
    std::fclose(f);
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  });
  cudaFree(device);
  cudaFreeHost(host);
  return out;
}

// `load`: into the engine; `host_load`: the host object, then its upload.
json::object compare(const std::string& what, const std::string& path, int runs, const std::function<void()>& load,
                     const std::function<void()>& host_load) {
  json::object floor = pinned_copy(path, runs);
  json::object ours = timed(runs, load);
  json::object host = timed(runs, host_load);
  const double ratio = ours.at("median_ms").as_double() / floor.at("median_ms").as_double();
  return {{"object", what},
          {"file_bytes", fs::file_size(path)},
          {"load_and_upload", ours},
          {"host_load_then_upload", host},
          {"pinned_read_and_copy", floor},
          {"ratio", ratio}};
}

std::string device_name(int device) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load-and-upload of saved keys and ciphertexts to the CUDA backend, against pinned read + copy (JSON)"};
  std::string preset_name = "slots32768_scale40_levels34";
  int runs = 9;
  int device = 0;
  std::string folder = fs::temp_directory_path() / "fhelium-bench-cuda-load";
  app.add_option("--preset", preset_name, "Parameter preset")->capture_default_str();
  app.add_option("--runs", runs, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--device", device, "CUDA device")->capture_default_str();
  app.add_option("--folder", folder, "Where the files are written")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto context = Context::create(preset(preset_name));
    Engine engine(context, cuda::make_cuda_backend({device}));
    Csprng rng;
    KeyGenerator keygen(context, rng);
    const SecretKey sk = keygen.secret_key();
    const HostSwitchKey seeded_rk = keygen.relinearization_key(sk);
    HostSwitchKey rk = seeded_rk;
    rk.a_seed.reset();  // the full form: a seeded key spends its load expanding a
    Encoder encoder(context);
    Encryptor encryptor(context, rng);
    std::vector<double> values(context->ring_degree() / 2, 0.5);
    const HostValue ct =
        encryptor.encrypt(encoder.encode(values, context->max_level(), context->params().scale), keygen.public_key(sk));
    fs::create_directories(folder);
    const std::string rk_path = (fs::path(folder) / "relinearization.key").string();
    const std::string seeded_rk_path = (fs::path(folder) / "relinearization-seeded.key").string();
    const std::string ct_path = (fs::path(folder) / "x.ct").string();
    save_relinearization_key_file(rk_path, *context, rk);
    save_relinearization_key_file(seeded_rk_path, *context, seeded_rk);
    save_ciphertext_file(ct_path, *context, ct);
    const auto key_loads = [&](const std::string& path) {
      return std::pair<std::function<void()>, std::function<void()>>{
          [&, path] {
            [[maybe_unused]] const RelinKey key = load_relinearization_key_file(path, engine);
            engine.backend().synchronize();
          },
          [&, path] {
            [[maybe_unused]] const RelinKey key =
                engine.upload_relinearization_key(load_relinearization_key_file(path, *context));
            engine.backend().synchronize();
          }};
    };
    json::array results;
    const auto [key_load, key_host_load] = key_loads(rk_path);
    results.push_back(compare("relinearization key", rk_path, runs, key_load, key_host_load));
    const auto [seeded_load, seeded_host_load] = key_loads(seeded_rk_path);
    results.push_back(compare("relinearization key, seeded", seeded_rk_path, runs, seeded_load, seeded_host_load));
    results.push_back(compare(
        "ciphertext", ct_path, runs,
        [&] {
          [[maybe_unused]] const Ciphertext c = load_ciphertext_file(ct_path, engine);
          engine.backend().synchronize();
        },
        [&] {
          [[maybe_unused]] const Ciphertext c = engine.upload_ciphertext(load_ciphertext_file(ct_path, *context));
          engine.backend().synchronize();
        }));
    fs::remove_all(folder);
    std::cout << json::serialize(json::object{{"benchmark", "fhelium-bench-cuda-load"},
                                              {"machine", device_name(device)},
                                              {"preset", preset_name},
                                              {"results", results}})
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium-bench-cuda-load: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
