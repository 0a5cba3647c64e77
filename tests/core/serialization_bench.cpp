// Save and load speed of the relinearization key and a ciphertext through
// files in a warm page cache; prints one JSON object. Not a test.
//
//   fhelium_serialization_bench [--preset NAME] [--runs R] [--dir DIR]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/serialization.hpp"

namespace {

using namespace fhelium;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string preset = "slots8192_scale40_levels7";
  int runs = 7;
  std::string dir = std::filesystem::temp_directory_path().string();
};

struct Timing {
  double median_s = 0;
  double min_s = 0;
};

Timing time_runs(int runs, const std::function<void()>& f) {
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    f();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[seconds.size() / 2], seconds.front()};
}

std::string json_case(const std::string& name, std::uintmax_t file_bytes, std::size_t object_bytes, int runs,
                      const Timing& save, const Timing& load) {
  const auto mb_per_s = [](double bytes, double s) { return bytes / s / 1e6; };
  char text[1024];
  std::snprintf(text, sizeof(text),
                "    {\"object\": \"%s\", \"file_bytes\": %ju, \"object_bytes\": %zu, \"runs\": %d,\n"
                "     \"save\": {\"median_s\": %.6f, \"min_s\": %.6f, \"file_mb_per_s\": %.0f, "
                "\"object_mb_per_s\": %.0f},\n"
                "     \"load\": {\"median_s\": %.6f, \"min_s\": %.6f, \"file_mb_per_s\": %.0f, "
                "\"object_mb_per_s\": %.0f}}",
                name.c_str(), file_bytes, object_bytes, runs, save.median_s, save.min_s,
                mb_per_s(static_cast<double>(file_bytes), save.median_s),
                mb_per_s(static_cast<double>(object_bytes), save.median_s), load.median_s, load.min_s,
                mb_per_s(static_cast<double>(file_bytes), load.median_s),
                mb_per_s(static_cast<double>(object_bytes), load.median_s));
  return text;
}

int usage(const char* argv0, int code) {
  std::cerr << "usage: " << argv0 << " [--preset NAME] [--runs R] [--dir DIR]\n"
            << "  Times save and load of: relinearization_key (seeded), relinearization_key_full,\n"
            << "  ciphertext (public-key encrypted, top level) and ciphertext_seeded (symmetric).\n"
            << "  --preset  default slots8192_scale40_levels7; one of:";
  for (const auto& name : preset_names()) std::cerr << ' ' << name;
  std::cerr << "\n  --runs    timed runs per case after one warm-up (default 7)\n"
            << "  --dir     folder for the files (default: the temporary folder)\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return usage(argv[0], 0);
    if (i + 1 >= argc) return usage(argv[0], 2);
    if (arg == "--preset") {
      options.preset = argv[++i];
    } else if (arg == "--runs") {
      options.runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--dir") {
      options.dir = argv[++i];
    } else {
      return usage(argv[0], 2);
    }
  }
  try {
    const auto context = Context::create(preset(options.preset));
    const Context& ctx = *context;
    Csprng rng;
    KeyGenerator keygen(context, rng);
    const SecretKey sk = keygen.secret_key();
    const PublicKey pk = keygen.public_key(sk);
    const HostSwitchKey rk = keygen.relinearization_key(sk);
    HostSwitchKey rk_full = rk;
    rk_full.a_seed.reset();
    Encoder encoder(context);
    Encryptor encryptor(context, rng);
    const std::vector<double> values(ctx.ring_degree() / 2, 0.5);
    const HostValue pt = encoder.encode(values, ctx.max_level(), ctx.params().scale);
    const HostValue ct = encryptor.encrypt(pt, pk);
    const SeededCiphertext ct_seeded = encryptor.encrypt_symmetric_seeded(pt, sk);

    const std::string base = options.dir + "/fhelium-serialization-bench-" + std::to_string(::getpid());
    std::vector<std::string> cases;
    const auto run_case = [&](const std::string& name, std::size_t object_bytes,
                              const std::function<void(const std::string&)>& save,
                              const std::function<void(const std::string&)>& load) {
      const std::string path = base + "-" + name;
      save(path);  // warm-up: the file is in the page cache from here on
      load(path);
      const Timing s = time_runs(options.runs, [&] { save(path); });
      const Timing l = time_runs(options.runs, [&] { load(path); });
      cases.push_back(json_case(name, std::filesystem::file_size(path), object_bytes, options.runs, s, l));
      std::filesystem::remove(path);
    };
    const std::size_t key_bytes = rk.data.size() * sizeof(u64);
    const std::size_t ct_bytes = ct.data.size() * sizeof(u64);
    run_case(
        "relinearization_key", key_bytes, [&](const std::string& p) { save_relinearization_key_file(p, ctx, rk); },
        [&](const std::string& p) { (void)load_relinearization_key_file(p, ctx); });
    run_case(
        "relinearization_key_full", key_bytes,
        [&](const std::string& p) { save_relinearization_key_file(p, ctx, rk_full); },
        [&](const std::string& p) { (void)load_relinearization_key_file(p, ctx); });
    run_case(
        "ciphertext", ct_bytes, [&](const std::string& p) { save_ciphertext_file(p, ctx, ct); },
        [&](const std::string& p) { (void)load_ciphertext_file(p, ctx); });
    run_case(
        "ciphertext_seeded", ct_bytes, [&](const std::string& p) { save_ciphertext_file(p, ctx, ct_seeded); },
        [&](const std::string& p) { (void)load_ciphertext_file(p, ctx); });

    std::cout << "{\"benchmark\": \"serialization\", \"preset\": \"" << options.preset
              << "\", \"ring_degree\": " << ctx.ring_degree() << ", \"key_digits\": " << ctx.key_digits()
              << ", \"key_limbs\": " << ctx.key_limbs() << ", \"cases\": [\n";
    for (std::size_t i = 0; i < cases.size(); ++i) std::cout << cases[i] << (i + 1 < cases.size() ? ",\n" : "\n");
    std::cout << "]}\n";
  } catch (const std::exception& e) {
    std::cerr << "fhelium_serialization_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
