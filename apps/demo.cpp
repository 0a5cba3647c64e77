#include "demo.hpp"

#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/plugins/loader.hpp"
#include "clear_message.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"

namespace fhelium::apps {
namespace {

// The default backend: CUDA when its plugin loads (a GPU is present), else CPU.
std::shared_ptr<Backend> choose_backend(const std::string& name) {
  if (name != "auto") return load_backend(name);
  try {
    return load_backend("cuda");
  } catch (const Error& e) {
    std::printf("cuda backend unavailable (%s); using cpu\n", e.what());
    return load_backend("cpu");
  }
}

}  // namespace

int run_demo(const DemoOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const auto context = Context::create(preset(options.preset));
  Engine engine(context, choose_backend(options.backend));
  std::printf("FHElium demo: preset %s (N = %llu, %d levels, log2(QP) = %.1f), backend %s\n",
              options.preset.c_str(), static_cast<unsigned long long>(context->ring_degree()),
              context->max_level(), context->log_qp(), engine.backend().name().c_str());

  Csprng rng;  // seeded by the operating system
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  const RelinKey rk = engine.upload_relinearization_key(keygen.relinearization_key(sk));
  const HostSwitchKey rotation_key = keygen.galois_key(sk, context->galois_element(1));
  const GaloisKeys gk = engine.upload_galois_keys(std::span(&rotation_key, 1));
  Encoder encoder(context);
  Encryptor encryptor(context, rng);
  Decryptor decryptor(context);

  const std::size_t slots = context->ring_degree() / 2;
  std::mt19937_64 gen(2026);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Message x(slots), y(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    x[i] = dist(gen);
    y[i] = dist(gen);
  }
  const double scale = context->params().scale;
  const int top = context->max_level();
  const auto encrypt = [&](const Message& m) {
    return engine.upload_ciphertext(encryptor.encrypt(encoder.encode(m, top, scale), pk));
  };
  const auto decrypt = [&](const Ciphertext& c) { return encoder.decode(decryptor.decrypt(engine.download(c), sk)); };

  const Ciphertext cx = encrypt(x);
  const Ciphertext cy = encrypt(y);
  // x * y, rotate(x, 1) and (x * y)^2, each against the clear result
  const Ciphertext xy = engine.multiply_relinearize_rescale(cx, cy, rk);
  const Ciphertext rx = engine.drop_to_level(engine.rotate(cx, 1, gk), xy.state.level);
  const Ciphertext z2 = engine.multiply_relinearize_rescale(xy, xy, rk);

  Message expected_xy(slots), expected_rx(slots), expected_z2(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    expected_xy[i] = x[i] * y[i];
    expected_rx[i] = x[(i + 1) % slots];
    expected_z2[i] = expected_xy[i] * expected_xy[i];
  }
  struct Row {
    const char* name;
    double error;
    double bound;
    int level;
  };
  const Row rows[] = {
      {"x * y (multiply, relinearize, rescale)", max_error(expected_xy, decrypt(xy)), 1e-4, xy.state.level},
      {"rotate(x, 1)", max_error(expected_rx, decrypt(rx)), 1e-4, rx.state.level},
      {"(x * y)^2", max_error(expected_z2, decrypt(z2)), 1e-4, z2.state.level},
  };
  bool ok = true;
  for (const Row& r : rows) {
    std::printf("  %-40s level %d  max error %.3e  (bound %.0e)\n", r.name, r.level, r.error, r.bound);
    ok = ok && r.error < r.bound;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%s in %.2f s\n", ok ? "all errors within bounds" : "ERROR: an error exceeds its bound", seconds);
  return ok ? 0 : 1;
}

}  // namespace fhelium::apps
