// Prints the clear-message error table (operation x preset x level) as
// Markdown: each operation on fresh encryptions of random messages of
// amplitude 0.01, decrypted and compared with the same computation in double
// precision. Not a test: the tests assert the bounds; this records the values.
#include <CLI/CLI.hpp>

#include <complex>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "fhelium/cpu/cpu_backend.hpp"
#include "clear_message.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"

namespace {

using namespace fhelium;
using apps::Message;
using apps::max_error;

void table_for(const std::string& name, double amplitude) {
  const auto context = Context::create(preset(name));
  Engine engine(context, cpu::make_cpu_backend());
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  const RelinKey rk = engine.upload_relinearization_key(keygen.relinearization_key(sk));
  std::vector<HostSwitchKey> host_keys;
  host_keys.push_back(keygen.galois_key(sk, context->galois_element(1)));
  host_keys.push_back(keygen.galois_key(sk, context->conjugation_element()));
  const GaloisKeys gk = engine.upload_galois_keys(host_keys);
  Encoder encoder(context);
  Encryptor encryptor(context, rng);
  Decryptor decryptor(context);
  const std::size_t slots = context->ring_degree() / 2;
  const double scale = context->params().scale;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> dist(-amplitude, amplitude);
  const auto random_message = [&] {
    Message m(slots);
    for (auto& x : m) x = {dist(gen), dist(gen)};
    return m;
  };
  const auto decrypt = [&](const Ciphertext& c) { return encoder.decode(decryptor.decrypt(engine.download(c), sk)); };

  const int top = context->max_level();
  for (int level : {top, top / 2, 1}) {
    const Message a = random_message(), b = random_message();
    const auto ca = engine.upload_ciphertext(encryptor.encrypt(encoder.encode(a, level, scale), pk));
    const auto cb = engine.upload_ciphertext(encryptor.encrypt(encoder.encode(b, level, scale), pk));
    const auto pb = engine.upload_plaintext(encoder.encode(b, level, scale));
    Message sum(slots), product(slots), rotated(slots), conj(slots);
    for (std::size_t i = 0; i < slots; ++i) {
      sum[i] = a[i] + b[i];
      product[i] = a[i] * b[i];
      rotated[i] = a[(i + 1) % slots];
      conj[i] = std::conj(a[i]);
    }
    const std::pair<const char*, double> rows[] = {
        {"encrypt/decrypt", max_error(a, decrypt(ca))},
        {"add", max_error(sum, decrypt(engine.add(ca, cb)))},
        {"multiply+relinearize+rescale", max_error(product, decrypt(engine.multiply_relinearize_rescale(ca, cb, rk)))},
        {"multiply_plain+rescale", max_error(product, decrypt(engine.rescale(engine.multiply_plain(ca, pb))))},
        {"rotate(1)", max_error(rotated, decrypt(engine.rotate(ca, 1, gk)))},
        {"conjugate", max_error(conj, decrypt(engine.conjugate(ca, gk)))},
    };
    for (const auto& [op, err] : rows) {
      std::printf("| %s | %d | %s | %.2e |\n", name.c_str(), level, op, err);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium clear-message error table (Markdown)"};
  std::vector<std::string> presets = {"slots8192_scale40_levels7", "slots16384_scale40_levels16",
                                      "slots32768_scale40_levels34"};
  double amplitude = 0.01;
  app.add_option("--preset", presets, "Presets")->expected(1, -1);
  app.add_option("--amplitude", amplitude, "Message amplitude (real and imaginary parts)");
  CLI11_PARSE(app, argc, argv);
  std::printf("| preset | level | operation | max abs error |\n|---|---|---|---|\n");
  for (const auto& p : presets) table_for(p, amplitude);
  return 0;
}
