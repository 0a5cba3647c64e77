// Writes the seed corpus of the loader fuzz targets: small valid objects of
// the fuzz context (fuzz_context.hpp), deterministic, one folder per target.
//
//   fhelium_fuzz_corpus OUT_DIR     (the committed corpus is tests/fuzz/corpus)
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/serialization.hpp"
#include "fuzz_context.hpp"

namespace {

using namespace fhelium;

struct Writer {
  std::filesystem::path root;

  template <class Save>
  void operator()(const std::string& target, const std::string& name, Save&& save) const {
    const auto dir = root / target;
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    save(out);
    if (!out) throw IoError("cannot write " + (dir / name).string());
  }
};

HostValue random_value(const Context& ctx, Csprng& rng, ValueState state) {
  HostValue v;
  v.state = state;
  v.data.resize(state.words(ctx));
  for (int c = 0; c < state.components; ++c) {
    for (int limb = 0; limb < state.limbs(ctx); ++limb) {
      rng.fill_uniform(std::span(v.limb(ctx, c, limb), ctx.ring_degree()),
                       ctx.key_modulus(state.key_limb(ctx, limb)).value);
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUT_DIR\n";
    return 2;
  }
  try {
    const Writer write{argv[1]};
    const auto context = Context::create(fuzz::fuzz_parameters());
    const Context& ctx = *context;
    Seed seed{};
    seed.fill(42);
    Csprng rng(seed);
    KeyGenerator keygen(context, rng);
    const SecretKey sk = keygen.secret_key();
    const PublicKey pk = keygen.public_key(sk);
    Encoder encoder(context);
    Encryptor encryptor(context, rng);
    const std::vector<double> values = {0.5, -1.25, 3.0};
    const HostValue pt = encoder.encode(values, ctx.max_level(), ctx.params().scale);
    const SaveOptions zstd{true, 3};

    write("parameters", "fuzz_context", [&](std::ostream& o) { save_parameters(o, ctx); });
    CkksParameters two_primes = fuzz::fuzz_parameters();
    two_primes.q_bits = {40, 30};
    write("parameters", "two_q_primes", [&](std::ostream& o) { save_parameters(o, *Context::create(two_primes)); });

    write("plaintext", "ntt", [&](std::ostream& o) { save_plaintext(o, ctx, pt); });
    HostValue pt_coefficient =
        random_value(ctx, rng, {ctx.id(), ctx.word_size(), 0, 1e6, Domain::coefficient, Basis::Q, 1});
    write("plaintext", "coefficient_zstd", [&](std::ostream& o) { save_plaintext(o, ctx, pt_coefficient, zstd); });

    write("ciphertext", "public_key_encrypted",
          [&](std::ostream& o) { save_ciphertext(o, ctx, encryptor.encrypt(pt, pk)); });
    write("ciphertext", "symmetric_seeded",
          [&](std::ostream& o) { save_ciphertext(o, ctx, encryptor.encrypt_symmetric_seeded(pt, sk)); });
    const HostValue three = random_value(ctx, rng, {ctx.id(), ctx.word_size(), 0, 1e12, Domain::ntt, Basis::Q, 3});
    write("ciphertext", "three_components_zstd", [&](std::ostream& o) { save_ciphertext(o, ctx, three, zstd); });
    const HostValue qp = random_value(ctx, rng, {ctx.id(), ctx.word_size(), 0, 1e6, Domain::coefficient, Basis::QP, 2});
    write("ciphertext", "qp_coefficient", [&](std::ostream& o) { save_ciphertext(o, ctx, qp); });

    write("public_key", "seeded", [&](std::ostream& o) { save_public_key(o, ctx, pk); });
    write("public_key", "full_zstd", [&](std::ostream& o) {
      save_public_key(o, ctx, PublicKey{pk.value, std::nullopt}, zstd);
    });

    const HostSwitchKey rk = keygen.relinearization_key(sk);
    HostSwitchKey rk_full = rk;
    rk_full.a_seed.reset();
    write("relinearization_key", "seeded", [&](std::ostream& o) { save_relinearization_key(o, ctx, rk); });
    write("relinearization_key", "seeded_zstd", [&](std::ostream& o) { save_relinearization_key(o, ctx, rk, zstd); });
    write("relinearization_key", "full", [&](std::ostream& o) { save_relinearization_key(o, ctx, rk_full); });

    std::vector<HostSwitchKey> galois = {keygen.galois_key(sk, ctx.galois_element(1)),
                                         keygen.galois_key(sk, ctx.conjugation_element())};
    write("galois_keys", "two_seeded", [&](std::ostream& o) { save_galois_keys(o, ctx, galois); });
    galois[1].a_seed.reset();
    write("galois_keys", "mixed_zstd", [&](std::ostream& o) { save_galois_keys(o, ctx, galois, zstd); });
    write("galois_keys", "empty", [&](std::ostream& o) { save_galois_keys(o, ctx, {}); });

    write("secret_key", "ternary", [&](std::ostream& o) { save_secret_key_unprotected(o, ctx, sk); });

    SparseEncapsulationKeys encapsulation = SparseEncapsulationKeys::generate(context, sk, rng, 8);
    write("sparse_encapsulation_keys", "seeded",
          [&](std::ostream& o) { save_sparse_encapsulation_keys(o, ctx, encapsulation); });
    encapsulation.sparse_to_dense.a_seed.reset();
    write("sparse_encapsulation_keys", "whole_zstd",
          [&](std::ostream& o) { save_sparse_encapsulation_keys(o, ctx, encapsulation, zstd); });
  } catch (const std::exception& e) {
    std::cerr << "fhelium_fuzz_corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
