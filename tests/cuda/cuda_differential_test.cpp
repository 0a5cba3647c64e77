// The CUDA backend against the CPU reference backend, bit for bit: every
// Backend operation runs on the same uploaded inputs and keys on both, and
// the downloaded residues are compared with ==. GPU outputs are poisoned
// (0xFF bytes) before each operation, so an unwritten residue shows up. The
// CUDA results are also decrypted and compared with the clear computation.
// Every test skips when no CUDA device is present (CI has none).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <sstream>

#include "expectations.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "helpers.hpp"
#include "require_gpu.hpp"
#include "world.hpp"

namespace fhelium::test {
namespace {

constexpr double message_tolerance = 1e-4;  // scale 2^40, amplitude 1
World& world_for(const std::string& name, const CkksParameters& params, std::uint8_t seed) {
  static std::unique_ptr<World> world;
  static std::string current;
  if (!world || current != name) {
    world.reset();  // frees the previous set's device memory first
    world = std::make_unique<World>(params, seed);
    current = name;
  }
  return *world;
}

// == on every residue, with the first mismatches and the poisoned count on failure.
testing::AssertionResult same_residues(const std::vector<u64>& expected, const std::vector<u64>& actual,
                                       std::size_t n) {
  if (expected.size() != actual.size()) {
    return testing::AssertionFailure() << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t mismatches = 0;
  std::size_t poisoned = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    if (actual[i] == poison) ++poisoned;
    if (mismatches++ < 5) {
      first << "\n  limb " << i / n << " (component-major) coefficient " << i % n << ": expected " << expected[i]
            << ", got " << actual[i];
    }
  }
  if (mismatches == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << mismatches << " of " << expected.size() << " residues differ (" << poisoned
                                     << " never written)" << first.str();
}

struct Case {
  std::string name;  // parameter set
  int level;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " at level " << c.level; }

// "N13_L3_K2": small_params; "N13_L3_K2_B44": every prime (Q and P) of 44
// bits, the top of the kernels' double-precision range.
CkksParameters params_of(const std::string& name) {
  if (name.rfind("slots", 0) == 0) return preset(name);
  int log_n = 0, levels = 0, specials = 0, bits = 0;
  const int fields = std::sscanf(name.c_str(), "N%d_L%d_K%d_B%d", &log_n, &levels, &specials, &bits);
  CkksParameters p = small_params(log_n, levels, specials);
  if (fields == 4) {
    p.q_bits.assign(p.q_bits.size(), bits);
    p.p_bits.assign(p.p_bits.size(), bits);
  }
  return p;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return info.param.name + "_at" + std::to_string(info.param.level);
}

class CudaDifferential : public testing::TestWithParam<Case> {};

TEST_P(CudaDifferential, EveryOperationBitExact) {
  REQUIRE_GPU();
  const Case& c = GetParam();
  World& w = world_for(c.name, params_of(c.name), static_cast<std::uint8_t>(c.name.size()));
  const Context& ctx = *w.context;
  const int level = c.level;
  const int limbs = level + 1;
  const std::size_t n = w.n();
  Backend& gpu = *w.gpu_backend;
  const BackendContext& gctx = *w.gpu_ctx;

  const Message ma = w.random_message();
  const Message mb = w.random_message();
  const HostValue ha = w.encryptor.encrypt(w.encoder.encode(ma, level, w.scale()), w.pk);
  const HostValue hb = w.encryptor.encrypt(w.encoder.encode(mb, level, w.scale()), w.pk);
  const HostValue hp = w.encoder.encode(mb, level, w.scale());
  const Ciphertext ca = w.cpu.upload_ciphertext(ha);
  const Ciphertext cb = w.cpu.upload_ciphertext(hb);
  const Plaintext cp = w.cpu.upload_plaintext(hp);
  const auto ga = w.gpu_upload(ha.data);
  const auto gb = w.gpu_upload(hb.data);
  const auto gp = w.gpu_upload(hp.data);
  const PolyArg a{ga.get(), 2, limbs};
  const PolyArg b{gb.get(), 2, limbs};
  const PolyArg p{gp.get(), 1, limbs};

  // Runs `op` on a poisoned output of (components, out_limbs) and compares with `expected`.
  auto check = [&](const char* what, const Value& expected, int components, int out_limbs, auto op) {
    SCOPED_TRACE(what);
    auto out = w.poisoned(w.words(components, out_limbs));
    op(PolyArg{out.get(), components, out_limbs});
    EXPECT_TRUE(same_residues(w.cpu.download(expected).data, w.gpu_download(*out, w.words(components, out_limbs)), n))
        << what;
  };

  check("add", w.cpu.add(ca, cb), 2, limbs, [&](const PolyArg& o) { gpu.add(gctx, o, a, b); });
  check("add plaintext", w.cpu.add(ca, cp), 2, limbs, [&](const PolyArg& o) { gpu.add(gctx, o, a, p); });
  check("sub", w.cpu.sub(ca, cb), 2, limbs, [&](const PolyArg& o) { gpu.sub(gctx, o, a, b); });
  check("sub plaintext", w.cpu.sub(ca, cp), 2, limbs, [&](const PolyArg& o) { gpu.sub(gctx, o, a, p); });
  check("negate", w.cpu.negate(ca), 2, limbs, [&](const PolyArg& o) { gpu.negate(gctx, o, a); });
  {
    SCOPED_TRACE("add in place (out aliases a)");
    auto acc = w.gpu_upload(ha.data);
    const PolyArg inplace{acc.get(), 2, limbs};
    gpu.add(gctx, inplace, inplace, b);
    EXPECT_TRUE(same_residues(w.cpu.download(w.cpu.add(ca, cb)).data, w.gpu_download(*acc, w.words(2, limbs)), n));
  }
  const auto add_residues = w.constant(0.75 * w.scale(), limbs);
  check("add_constant ntt", w.cpu.add_scalar(ca, 0.75), 2, limbs,
        [&](const PolyArg& o) { gpu.add_constant(gctx, o, a, add_residues, true); });
  const auto mul_residues = w.constant(-1.5 * w.scale(), limbs);
  check("multiply_constant", w.cpu.multiply_scalar(ca, -1.5, w.scale()), 2, limbs,
        [&](const PolyArg& o) { gpu.multiply_constant(gctx, o, a, mul_residues); });
  check("multiply_plain", w.cpu.multiply_plain(ca, cp), 2, limbs,
        [&](const PolyArg& o) { gpu.multiply_plain(gctx, o, a, p); });
  const Ciphertext product = w.cpu.multiply(ca, cb);
  check("multiply", product, 3, limbs, [&](const PolyArg& o) { gpu.multiply(gctx, o, a, b); });

  // Domains: coefficient-domain inputs are the CPU's transform of a.
  const Ciphertext coeff = w.cpu.to_coefficient(ca);
  check("to_coefficient", coeff, 2, limbs, [&](const PolyArg& o) { gpu.to_coefficient(gctx, o, a); });
  const HostValue hcoeff = w.cpu.download(coeff);
  const auto gcoeff = w.gpu_upload(hcoeff.data);
  const PolyArg ac{gcoeff.get(), 2, limbs};
  check("to_ntt", w.cpu.to_ntt(coeff), 2, limbs, [&](const PolyArg& o) { gpu.to_ntt(gctx, o, ac); });
  const auto coeff_residues = w.constant(2.0 * w.scale(), limbs);
  check("add_constant coefficient", w.cpu.add_scalar(coeff, 2.0), 2, limbs,
        [&](const PolyArg& o) { gpu.add_constant(gctx, o, ac, coeff_residues, false); });

  // Levels.
  check("drop_limbs to level 0", w.cpu.drop_to_level(ca, 0), 2, 1, [&](const PolyArg& o) { gpu.drop_limbs(gctx, o, a); });
  if (level >= 1) {
    check("rescale", w.cpu.rescale(ca), 2, limbs - 1, [&](const PolyArg& o) { gpu.rescale(gctx, o, a); });
    const HostValue hproduct = w.cpu.download(product);
    const auto gproduct = w.gpu_upload(hproduct.data);
    check("rescale (3 components)", w.cpu.rescale(product), 3, limbs - 1,
          [&](const PolyArg& o) { gpu.rescale(gctx, o, PolyArg{gproduct.get(), 3, limbs}); });
    check("drop_limbs by one", w.cpu.drop_to_level(ca, level - 1), 2, limbs - 1,
          [&](const PolyArg& o) { gpu.drop_limbs(gctx, o, a); });
  }

  // Key switching: the GPU input is the CPU's product, uploaded.
  const HostValue hproduct = w.cpu.download(product);
  const auto gproduct = w.gpu_upload(hproduct.data);
  const PolyArg a3{gproduct.get(), 3, limbs};
  const KeyArg rk{w.gpu_rk.buffer.get(), w.gpu_rk.digits};
  check("relinearize", w.cpu.relinearize(product, w.cpu_rk), 2, limbs,
        [&](const PolyArg& o) { gpu.relinearize(gctx, o, a3, rk); });
  check("multiply_relinearize", w.cpu.relinearize(product, w.cpu_rk), 2, limbs,
        [&](const PolyArg& o) { gpu.multiply_relinearize(gctx, o, a, b, rk); });
  for (std::size_t r = 0; r < w.elements.size(); ++r) {
    const std::uint32_t g = w.elements[r];
    const SwitchKey& key = w.gpu_gk.keys.at(g);
    const Ciphertext expected = r < w.steps.size() ? w.cpu.rotate(ca, w.steps[r], w.cpu_gk) : w.cpu.conjugate(ca, w.cpu_gk);
    const std::string what = "rotate by Galois element " + std::to_string(g);
    check(what.c_str(), expected, 2, limbs,
          [&](const PolyArg& o) { gpu.rotate(gctx, o, a, g, KeyArg{key.buffer.get(), key.digits}); });
  }
  {
    SCOPED_TRACE("rotate_hoisted (rotations and conjugation)");
    std::vector<std::shared_ptr<Buffer>> gouts;
    std::vector<PolyArg> gargs, cargs;
    std::vector<KeyArg> gkeys, ckeys;
    std::vector<Ciphertext> couts;
    for (auto g : w.elements) {
      gouts.push_back(w.poisoned(w.words(2, limbs)));
      gargs.push_back({gouts.back().get(), 2, limbs});
      gkeys.push_back({w.gpu_gk.keys.at(g).buffer.get(), w.gpu_gk.keys.at(g).digits});
      ckeys.push_back({w.cpu_gk.keys.at(g).buffer.get(), w.cpu_gk.keys.at(g).digits});
      couts.push_back(w.cpu.drop_to_level(ca, level));  // a CPU output buffer of the right shape
      cargs.push_back({couts.back().buffer.get(), 2, limbs});
    }
    w.cpu_backend->rotate_hoisted(*w.cpu_ctx, cargs, PolyArg{ca.buffer.get(), 2, limbs}, w.elements, ckeys);
    gpu.rotate_hoisted(gctx, gargs, a, w.elements, gkeys);
    for (std::size_t r = 0; r < w.elements.size(); ++r) {
      EXPECT_TRUE(same_residues(w.cpu.download(couts[r]).data, w.gpu_download(*gouts[r], w.words(2, limbs)), n))
          << "hoisted rotation " << r << " (Galois element " << w.elements[r] << ")";
    }
  }

  // The same through the CUDA Engine, and the clear message.
  const Ciphertext ga_ct = w.gpu.upload_ciphertext(ha);
  const Ciphertext gb_ct = w.gpu.upload_ciphertext(hb);
  const auto hoisted_gpu = w.gpu.rotate_hoisted(ga_ct, w.steps, w.gpu_gk);
  const auto hoisted_cpu = w.cpu.rotate_hoisted(ca, w.steps, w.cpu_gk);
  for (std::size_t r = 0; r < w.steps.size(); ++r) {
    EXPECT_TRUE(same_residues(w.cpu.download(hoisted_cpu[r]).data, w.gpu.download(hoisted_gpu[r]).data, n))
        << "Engine rotate_hoisted step " << w.steps[r];
    EXPECT_LT(max_error(rotate_left(ma, w.steps[r]), w.decrypt_gpu(hoisted_gpu[r])), message_tolerance)
        << "hoisted step " << w.steps[r];
  }
  Message sum(ma.size()), prod(ma.size()), conj(ma.size());
  for (std::size_t i = 0; i < ma.size(); ++i) {
    sum[i] = ma[i] + mb[i];
    prod[i] = ma[i] * mb[i];
    conj[i] = std::conj(ma[i]);
  }
  EXPECT_LT(max_error(sum, w.decrypt_gpu(w.gpu.add(ga_ct, gb_ct))), message_tolerance) << "add";
  if (level >= 1) {  // at level 0 the product's scale 2^80 exceeds q_0
    const Ciphertext relin = w.gpu.relinearize(w.gpu.multiply(ga_ct, gb_ct), w.gpu_rk);
    EXPECT_LT(max_error(prod, w.decrypt_gpu(relin)), message_tolerance) << "multiply + relinearize";
    EXPECT_LT(max_error(prod, w.decrypt_gpu(w.gpu.rescale(relin))), message_tolerance) << "... + rescale";
    const Plaintext gpt = w.gpu.upload_plaintext(hp);
    EXPECT_LT(max_error(prod, w.decrypt_gpu(w.gpu.rescale(w.gpu.multiply_plain(ga_ct, gpt)))), message_tolerance)
        << "multiply_plain + rescale";
  }
  EXPECT_LT(max_error(rotate_left(ma, 1), w.decrypt_gpu(w.gpu.rotate(ga_ct, 1, w.gpu_gk))), message_tolerance)
      << "rotate 1";
  EXPECT_LT(max_error(conj, w.decrypt_gpu(w.gpu.conjugate(ga_ct, w.gpu_gk))), message_tolerance) << "conjugate";
  EXPECT_LT(max_error(ma, w.decrypt_gpu(w.gpu.to_ntt(w.gpu.to_coefficient(ga_ct)))), message_tolerance)
      << "to_coefficient + to_ntt";
  (void)ctx;
}

// N = 2^12 .. 2^16 with 1, 2 and 4 special primes (digits of 1, 2, 4 primes,
// partial last digits), at the top, a middle and the lowest levels, the two
// presets the benchmarks use, and all-44-bit primes (the double-precision
// NTT and basis conversions at the top of their range, P included).
INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaDifferential,
    testing::Values(Case{"N12_L5_K2", 5}, Case{"N12_L5_K2", 2}, Case{"N12_L5_K2", 1},
                    Case{"N13_L6_K4", 6}, Case{"N13_L6_K4", 3}, Case{"N13_L6_K4", 0},
                    Case{"N14_L7_K1", 7}, Case{"N14_L7_K1", 4}, Case{"N14_L7_K1", 1},
                    Case{"N15_L9_K2", 9}, Case{"N15_L9_K2", 4}, Case{"N15_L9_K2", 0},
                    Case{"N16_L11_K4", 11}, Case{"N16_L11_K4", 6}, Case{"N16_L11_K4", 1},
                    Case{"N13_L3_K2_B44", 3}, Case{"N14_L4_K1_B44", 4},
                    Case{"slots8192_scale40_levels7", 7}, Case{"slots8192_scale40_levels7", 3},
                    Case{"slots32768_scale40_levels34", 34}, Case{"slots32768_scale40_levels34", 17},
                    Case{"slots32768_scale40_levels34", 1}),
    case_name);

// Forward and inverse transforms of 2 components x `limbs` limbs of random
// residues (each limb's first 64 the largest ones) on the GPU, against the
// CPU backend, outputs poisoned first. Batches of at most 2 limbs take the
// one-launch transform at 2^16 (ntt_wide_cluster.cuh), larger ones the
// two-kernel one.
void expect_transforms_match(const CkksParameters& params, unsigned seed, int limbs = 3) {
  constexpr int components = 2;
  const auto context = Context::create(params);
  Engine cpu(context, cpu::make_cpu_backend());
  auto gpu_backend = cuda::make_cuda_backend();
  const auto gctx = gpu_backend->prepare(context);
  const std::size_t n = context->ring_degree();
  HostValue host;
  host.state = {context->id(), context->word_size(), limbs - 1, params.scale, Domain::coefficient, Basis::Q,
                components};
  host.data.resize(host.state.words(*context));
  std::mt19937_64 gen(seed);
  for (int comp = 0; comp < components; ++comp) {
    for (int limb = 0; limb < limbs; ++limb) {
      const u64 q = context->q()[static_cast<std::size_t>(limb)].value;
      u64* x = host.limb(*context, comp, limb);
      for (std::size_t k = 0; k < n; ++k) x[k] = k < 64 ? q - 1 - k % 2 : gen() % q;
    }
  }
  const Ciphertext coeff = cpu.upload_ciphertext(host);
  const std::size_t words = host.data.size();
  auto in = gpu_backend->allocate(words * sizeof(u64));
  gpu_backend->upload(*in, host.data.data(), words * sizeof(u64));
  auto out = gpu_backend->allocate(words * sizeof(u64));
  const std::vector<u64> fill(words, poison);
  gpu_backend->upload(*out, fill.data(), words * sizeof(u64));
  const PolyArg in_arg{in.get(), components, limbs};
  const PolyArg out_arg{out.get(), components, limbs};
  gpu_backend->to_ntt(*gctx, out_arg, in_arg);
  std::vector<u64> forward(words);
  gpu_backend->download(*out, forward.data(), words * sizeof(u64));
  EXPECT_TRUE(same_residues(cpu.download(cpu.to_ntt(coeff)).data, forward, n)) << "forward";
  gpu_backend->upload(*in, fill.data(), words * sizeof(u64));
  gpu_backend->to_coefficient(*gctx, in_arg, out_arg);
  std::vector<u64> back(words);
  gpu_backend->download(*in, back.data(), words * sizeof(u64));
  EXPECT_TRUE(same_residues(host.data, back, n)) << "inverse";
}

// The double-precision transforms at the edges of their range (primes of
// 30, 43 and 44 bits) and the integer ones just above it (45 bits), at the
// one-launch (2^14; 2^16 with 2 limbs) and two-kernel shapes.
TEST(CudaTransforms, EveryPrimeSizeAroundTheDoublePrecisionLimit) {
  REQUIRE_GPU();
  for (int bits : {30, 43, 44, 45}) {
    for (int log_n : {12, 14, 16}) {
      SCOPED_TRACE(std::to_string(bits) + "-bit primes, N = 2^" + std::to_string(log_n));
      CkksParameters params = small_params(log_n, 2, 1);
      params.q_bits.assign(params.q_bits.size(), bits);
      params.p_bits.assign(params.p_bits.size(), bits);
      params.scale = std::ldexp(1.0, bits - 4);
      expect_transforms_match(params, static_cast<unsigned>(bits * 100 + log_n));
      expect_transforms_match(params, static_cast<unsigned>(bits * 100 + log_n + 1), 1);
    }
  }
}

// Transforms at the ring sizes whose kernel shapes the key-switching tests
// do not reach (one tile of 2^10 or 2^11 words; 32 columns of 2^12-word tiles).
TEST(CudaTransforms, RandomResiduesAtEveryKernelShape) {
  REQUIRE_GPU();
  for (int log_n : {10, 11, 12, 17}) {
    SCOPED_TRACE("N = 2^" + std::to_string(log_n));
    expect_transforms_match(small_params(log_n, 2, 1), static_cast<unsigned>(log_n));
  }
}

TEST(CudaBackendErrors, MissingDeviceIsBackendError) {
  REQUIRE_GPU();
  try {
    cuda::make_cuda_backend({999});
    FAIL() << "device 999 was accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("device 999 does not exist"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::make_cuda_backend({-1}), BackendError);
}

TEST(CudaBackendErrors, OutOfMemoryIsBackendErrorAndBackendStaysUsable) {
  REQUIRE_GPU();
  auto backend = cuda::make_cuda_backend();
  try {
    backend->allocate(std::size_t{1} << 40);  // 1 TiB
    FAIL() << "a 1 TiB allocation succeeded";
  } catch (const BackendError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("allocating 1099511627776 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
  }
  // Still usable: a round trip and an operation.
  const auto context = Context::create(small_params(12, 2, 1));
  Engine cpu(context, cpu::make_cpu_backend());
  Engine gpu(context, backend);
  Csprng rng(test_seed(3));
  KeyGenerator keygen(context, rng);
  const SecretKey sk = keygen.secret_key();
  const PublicKey pk = keygen.public_key(sk);
  Encoder encoder(context);
  Encryptor encryptor(context, rng);
  std::vector<double> m(context->ring_degree() / 2, 0.5);
  const HostValue host = encryptor.encrypt(encoder.encode(m, 2, std::ldexp(1.0, 40)), pk);
  const auto on_gpu = gpu.upload_ciphertext(host);
  EXPECT_EQ(gpu.download(on_gpu).data, host.data);
  EXPECT_EQ(gpu.download(gpu.rescale(on_gpu)).data, cpu.download(cpu.rescale(cpu.upload_ciphertext(host))).data);
}

TEST(CudaBackendErrors, ForeignBuffersAndContextsAreRefused) {
  REQUIRE_GPU();
  auto gpu_backend = cuda::make_cuda_backend();
  auto cpu_backend = cpu::make_cpu_backend();
  const auto context = Context::create(small_params(12, 1, 1));
  const auto gctx = gpu_backend->prepare(context);
  const auto cctx = cpu_backend->prepare(context);
  const std::size_t bytes = 2 * 2 * context->ring_degree() * sizeof(u64);
  auto host_buffer = cpu_backend->allocate(bytes);
  auto device_buffer = gpu_backend->allocate(bytes);
  const PolyArg cpu_arg{host_buffer.get(), 2, 2};
  const PolyArg gpu_arg{device_buffer.get(), 2, 2};
  EXPECT_THROW(gpu_backend->add(*gctx, gpu_arg, cpu_arg, gpu_arg), BackendError);
  EXPECT_THROW(gpu_backend->add(*cctx, gpu_arg, gpu_arg, gpu_arg), BackendError);
  EXPECT_THROW(gpu_backend->add(*gctx, PolyArg{device_buffer.get(), 3, 2}, gpu_arg, gpu_arg), BackendError);
  EXPECT_THROW(cuda::native_stream(*cpu_backend), BackendError);
  EXPECT_NO_THROW(gpu_backend->add(*gctx, gpu_arg, gpu_arg, gpu_arg));
  EXPECT_NO_THROW(gpu_backend->synchronize());
}

// A key switch refuses an operand of the wrong shape before anything runs,
// naming the operand, its shape and the one expected; the backend stays usable.
TEST(CudaBackendErrors, KeySwitchShapesAreRefusedByName) {
  REQUIRE_GPU();
  World w(small_params(12, 2, 1), 41);
  constexpr int limbs = 3;
  Backend& gpu = *w.gpu_backend;
  const BackendContext& ctx = *w.gpu_ctx;
  const auto in = w.poisoned(w.words(3, limbs));
  const auto out = w.poisoned(w.words(2, limbs));
  const PolyArg two{in.get(), 2, limbs};
  const PolyArg fewer{in.get(), 2, limbs - 1};
  const PolyArg result{out.get(), 2, limbs};
  const KeyArg rk{w.gpu_rk.buffer.get(), w.gpu_rk.digits};
  const std::uint32_t g = w.elements.front();
  const KeyArg gk{w.gpu_gk.keys.at(g).buffer.get(), w.gpu_gk.keys.at(g).digits};
  expect_contains(error_of<BackendError>([&] { gpu.relinearize(ctx, result, two, rk); }),
                  {"relinearize", "input of 2 components and 3 limbs, expected 3 components of 3 limbs"});
  expect_contains(error_of<BackendError>([&] { gpu.multiply_relinearize(ctx, result, two, fewer, rk); }),
                  {"multiply_relinearize", "second operand of 2 components and 2 limbs, expected 2 components of 3"});
  expect_contains(error_of<BackendError>([&] { gpu.multiply_relinearize(ctx, fewer, two, two, rk); }),
                  {"multiply_relinearize", "output of 2 components and 2 limbs"});
  expect_contains(error_of<BackendError>([&] { gpu.rotate(ctx, PolyArg{out.get(), 2, limbs - 1}, two, g, gk); }),
                  {"rotate", "output of 2 components and 2 limbs, expected 2 components of 3 limbs"});
  EXPECT_NO_THROW(gpu.add(ctx, result, two, two));
  EXPECT_NO_THROW(gpu.synchronize());
}

}  // namespace
}  // namespace fhelium::test
