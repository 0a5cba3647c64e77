// Prints the clear-message error table (operation x preset x level) as
// Markdown: each operation on fresh encryptions of messages uniform in
// [-1, 1] over all slots (real, then complex: both parts uniform), decrypted
// and compared with the same computation in double precision (real inputs:
// the largest error of the real parts; complex: of the modulus), in absolute
// error and bits, beside Microsoft SEAL 4.4.3's figures for the same
// operation and parameters where we have them. Not a test: the tests assert
// the bounds; this records the values. With --seed the keys, noise and
// messages are fixed, so two backends must print the same table.
#include <CLI/CLI.hpp>

#include <cmath>
#include <complex>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend_choice.hpp"
#include "clear_message.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"

namespace {

using namespace fhelium;
using apps::Message;
using apps::max_error;
using apps::max_real_error;

// SEAL 4.4.3, scale 2^40, inputs uniform in [-1, 1] over all slots (issue #29).
std::string seal_figure(std::uint64_t ring_degree, const std::string& operation) {
  if (ring_degree == 16384 && operation == "multiply+relinearize+rescale") return "2.1e-08 .. 2.7e-08";
  if (ring_degree == 32768 && operation == "multiply+relinearize+rescale") return "4.2e-08 .. 5.4e-08";
  if (ring_degree == 16384 && operation == "rotate(1)") return "5.3e-07 .. 2.0e-06";
  if (ring_degree == 32768 && operation == "rotate(1)") return "1.6e-06 .. 6.1e-06";
  return "";
}

struct Row {
  std::string operation;
  double error[2];  // real inputs, complex inputs
};

void table_for(const std::string& name, const std::shared_ptr<Backend>& backend, std::optional<Seed> seed) {
  const auto context = Context::create(preset(name));
  Engine engine(context, backend);
  Csprng rng(seed ? *seed : Csprng::os_seed());
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
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const auto random_message = [&](bool complex) {
    Message m(slots);
    for (auto& x : m) x = {dist(gen), complex ? dist(gen) : 0.0};
    return m;
  };
  const auto decrypt = [&](const Ciphertext& c) { return encoder.decode(decryptor.decrypt(engine.download(c), sk)); };

  const int top = context->max_level();
  for (int level : {top, top / 2, 1}) {  // 1: the last level that can still rescale
    std::vector<Row> rows;
    for (int complex = 0; complex < 2; ++complex) {
      const Message a = random_message(complex), b = random_message(complex);
      const auto ca = engine.upload_ciphertext(encryptor.encrypt(encoder.encode(a, level, scale), pk));
      const auto cb = engine.upload_ciphertext(encryptor.encrypt(encoder.encode(b, level, scale), pk));
      const auto cs = engine.upload_ciphertext(encryptor.encrypt_symmetric(encoder.encode(a, level, scale), sk));
      const auto pb = engine.upload_plaintext(encoder.encode(b, level, scale));
      Message sum(slots), product(slots), rotated(slots), conj(slots);
      for (std::size_t i = 0; i < slots; ++i) {
        sum[i] = a[i] + b[i];
        product[i] = a[i] * b[i];
        rotated[i] = a[(i + 1) % slots];
        conj[i] = std::conj(a[i]);
      }
      // Real inputs: the real parts a user reads back; complex inputs: the modulus.
      const auto error = [complex](const Message& expected, const Message& actual) {
        return complex ? max_error(expected, actual) : max_real_error(expected, actual);
      };
      const std::pair<const char*, double> errors[] = {
          {"encrypt (public key)", error(a, decrypt(ca))},
          {"encrypt (secret key)", error(a, decrypt(cs))},
          {"add", error(sum, decrypt(engine.add(ca, cb)))},
          {"multiply+relinearize+rescale", error(product, decrypt(engine.multiply_relinearize_rescale(ca, cb, rk)))},
          {"multiply_plain+rescale", error(product, decrypt(engine.rescale(engine.multiply_plain(ca, pb))))},
          {"rotate(1)", error(rotated, decrypt(engine.rotate(ca, 1, gk)))},
          {"conjugate", error(conj, decrypt(engine.conjugate(ca, gk)))},
      };
      rows.resize(std::size(errors));
      for (std::size_t r = 0; r < rows.size(); ++r) {
        rows[r].operation = errors[r].first;
        rows[r].error[complex] = errors[r].second;
      }
    }
    for (const Row& row : rows) {
      std::printf("| %s | %d | %s | %.2e | %.1f | %.2e | %.1f | %s |\n", name.c_str(), level, row.operation.c_str(),
                  row.error[0], -std::log2(row.error[0]), row.error[1], -std::log2(row.error[1]),
                  seal_figure(context->ring_degree(), row.operation).c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FHElium clear-message error table (Markdown)"};
  std::vector<std::string> presets = {"slots8192_scale40_levels7", "slots16384_scale40_levels16",
                                      "slots32768_scale40_levels34"};
  std::string backend_name = "cpu";
  std::optional<unsigned> seed_byte;
  app.add_option("--preset", presets, "Presets")->expected(1, -1);
  app.add_option("--backend", backend_name, "Backend name or plugin path (auto: cuda when available, else cpu)");
  app.add_option("--seed", seed_byte, "Fixed CSPRNG seed (every byte this value) instead of the OS's")
      ->check(CLI::Range(0, 255));
  CLI11_PARSE(app, argc, argv);
  const apps::ChosenBackend chosen = apps::choose_backend(backend_name);
  if (!chosen.note.empty()) std::fprintf(stderr, "%s\n", chosen.note.c_str());
  std::optional<Seed> seed;
  if (seed_byte) {
    seed.emplace();
    seed->fill(static_cast<std::uint8_t>(*seed_byte));
  }
  std::printf("backend %s\n\n", chosen.backend->name().c_str());
  std::printf("| preset | level | operation | real: max abs error | bits | complex: max abs error | bits | SEAL 4.4.3 |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const auto& p : presets) table_for(p, chosen.backend, seed);
  return 0;
}
