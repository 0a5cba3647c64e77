// The circuits manual's complete example (docs/circuits.md): a 16 x 16 layer
// and a sigmoid as one Program on the cpu plugin, exactly the keys it lists,
// the decrypted result against the clear evaluator and the mathematics.
// Built as fhelium-circuits-example; CI runs it (exit 1 when an error is
// beyond its bound).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include "fhelium/circuits/linear_transform.hpp"
#include "fhelium/circuits/polynomial.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/plugins/loader.hpp"
#include "fhelium/random.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "fhelium/runtime/evaluation_keys.hpp"
#include "fhelium/runtime/program.hpp"

using namespace fhelium;
using runtime::Slots;

int main() {
  auto context = Context::create(preset("slots8192_scale40_levels7"));  // levels 7 .. 0
  Engine engine(context, load_backend("cpu"));
  const std::size_t slots = context->ring_degree() / 2;

  // The calculation: sigmoid(M v), M 16 x 16 with entries in [-1/4, 1/4], v in [-1, 1]^16,
  // so M v lies in [-4, 4], the interval of the interpolant.
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> small(-0.25, 0.25), unit(-1.0, 1.0);
  std::vector<std::vector<double>> m(16, std::vector<double>(16));
  for (auto& row : m) {
    for (auto& e : row) e = small(gen);
  }
  const auto sigmoid = [](double t) { return 1.0 / (1.0 + std::exp(-t)); };
  const auto lt = circuits::LinearTransform::from_matrix(m, slots);
  const auto p = circuits::Polynomial::chebyshev_interpolant(sigmoid, 15, -4.0, 4.0);

  // 1. Build. The input's state is a fresh encryption's: top level, default scale.
  ValueState x_state;
  x_state.context_id = context->id();
  x_state.word_size = context->word_size();
  x_state.level = context->max_level();
  x_state.scale = context->params().scale;
  runtime::ProgramBuilder b(context, "layer");
  const runtime::ValueRef x = b.input("x", x_state);
  const runtime::ValueRef h = lt.apply(b, x, "w");                    // level 6, x's scale
  const runtime::ValueRef y = circuits::evaluate_polynomial(b, h, p);  // level 6 - (4 + 1) = 1
  b.output("y", y);

  // 2. Prepare: every state and the exact key list, before any key exists.
  const runtime::PreparedProgram prepared = b.prepare();
  const runtime::KeyRequirements needed = prepared.required_keys();
  // needed.relinearization: true; needed.rotation_steps: {1, 2, 3, 4, 8, 12} = lt.rotation_steps()

  // 3. Generate exactly those keys.
  Csprng rng;
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  const runtime::EvaluationKeys keys = runtime::EvaluationKeys::generate(needed, engine, keygen, sk, rng);

  // 4. Link: keys borrowed, the diagonals as clear values (encoded at their prepared state).
  runtime::Materials materials = keys.materials();
  for (const auto& [name, values] : b.constant_values()) materials.constants.emplace(name, values);
  const runtime::Executable exe = runtime::link(prepared, engine, materials);

  // 5. Encrypt, run, decrypt.
  std::vector<double> v(16);
  for (auto& e : v) e = unit(gen);
  const Slots xm = lt.pack(Slots(v.begin(), v.end()));
  Encoder encoder(context);
  Encryptor encryptor(context, rng);
  const Ciphertext ct = engine.upload_ciphertext(
      encryptor.encrypt(encoder.encode(xm, x_state.level, x_state.scale), pk));
  const runtime::ValueTree out = exe.run(runtime::ValueTree(runtime::ValueTree::Map{{"x", ct}}));
  const Ciphertext& yc = out.at("y").ciphertext();  // yc.state == prepared.state("y")
  const Slots decrypted = encoder.decode(Decryptor(context).decrypt(engine.download(yc), sk));

  // 6. Compare: with the same Program on clear slots (CKKS noise only), and with
  //    sigmoid(M v) itself (noise plus the interpolant's error).
  const Slots clear =
      runtime::evaluate_clear(prepared.program(), {{"x", xm}}, b.constant_values(), slots).at("y");
  double vs_clear = 0, vs_math = 0;
  for (std::size_t i = 0; i < slots; ++i) {
    double mv = 0;
    for (std::size_t j = 0; j < 16; ++j) mv += m[i % 16][j] * v[j];
    vs_clear = std::max(vs_clear, std::abs(decrypted[i] - clear[i]));
    vs_math = std::max(vs_math, std::abs(decrypted[i].real() - sigmoid(mv)));
  }
  std::printf("level %d, scale 2^%.3f, max error vs clear %.2e, vs sigmoid %.2e\n", yc.state.level,
              std::log2(yc.state.scale), vs_clear, vs_math);
  // CKKS noise at 2^40 is far below 1e-5; the degree-15 interpolant of the sigmoid on [-4, 4] is within 1e-4.
  return vs_clear < 1e-5 && vs_math < 1e-3 ? 0 : 1;
}
