// The CUDA backend's errors: a missing device, out of memory, foreign
// buffers and contexts, key switches of the wrong shape; each a BackendError
// that names the problem, the backend usable afterwards. Every test skips
// when no CUDA device is present (CI has none).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "expectations.hpp"
#include "fhelium/cuda/cuda_backend.hpp"
#include "helpers.hpp"
#include "require_gpu.hpp"
#include "world.hpp"

namespace fhelium::test {
namespace {

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

// A value of the 32-bit word family has 4-byte residues: a buffer sized for
// them is accepted, one short of them refused by name; the 64-bit family's
// context on the same backend keeps working.
TEST(CudaBackendErrors, The32BitWordFamilyChecksItsBufferSizes) {
  REQUIRE_GPU();
  auto backend = cuda::make_cuda_backend();
  const auto context = Context::create(small_int32_params(12));
  const auto prepared = backend->prepare(context);
  const int limbs = context->level_basis(context->max_level()).count;
  const std::size_t bytes = 2 * static_cast<std::size_t>(limbs) * context->ring_degree() * sizeof(std::uint32_t);
  const auto fits = backend->allocate(bytes);
  const auto short_one = backend->allocate(bytes - 4);
  const PolyArg ok{fits.get(), 2, limbs};
  EXPECT_NO_THROW(backend->add(*prepared, ok, ok, ok));
  try {
    backend->add(*prepared, PolyArg{short_one.get(), 2, limbs}, ok, ok);
    FAIL() << "a buffer one word short was accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(bytes)), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(backend->prepare(Context::create(small_params(12, 1, 1))));
  EXPECT_NO_THROW(backend->synchronize());
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

// A product refuses operands of the wrong shape before any kernel reads them
// (a short operand would be read past its end): multiply on its own, and
// multiply_relinearize_rescale on the backend's default path (one special
// prime at 2^12) and on the fused one (two special primes: ModDown's general
// path). The backend stays usable, and the outputs keep their poison.
TEST(CudaBackendErrors, ProductShapesAreRefusedBeforeAnyKernel) {
  REQUIRE_GPU();
  for (const int specials : {1, 2}) {
    SCOPED_TRACE("special primes: " + std::to_string(specials));
    World w(small_params(12, 2, specials), 43);
    constexpr int limbs = 3;
    Backend& gpu = *w.gpu_backend;
    const BackendContext& ctx = *w.gpu_ctx;
    const auto in = w.poisoned(w.words(2, limbs));
    const auto short_in = w.poisoned(w.words(2, limbs - 1));  // a read past it leaves its allocation
    const auto out = w.poisoned(w.words(3, limbs));
    const PolyArg two{in.get(), 2, limbs};
    const PolyArg fewer{short_in.get(), 2, limbs - 1};
    const PolyArg product{out.get(), 3, limbs};
    const PolyArg rescaled{out.get(), 2, limbs - 1};
    const KeyArg rk{w.gpu_rk.buffer.get(), w.gpu_rk.digits};
    expect_contains(error_of<BackendError>([&] { gpu.multiply(ctx, product, two, fewer); }),
                    {"cuda multiply", "second operand of 2 components and 2 limbs, expected 2 components of 3 limbs"});
    expect_contains(error_of<BackendError>([&] { gpu.multiply(ctx, product, fewer, two); }),
                    {"cuda multiply", "first operand of 2 components and 2 limbs"});
    expect_contains(
        error_of<InvalidArgumentError>([&] { gpu.multiply_relinearize_rescale(ctx, rescaled, two, fewer, rk); }),
        {"multiply_relinearize_rescale",
         "second operand has 2 components of 2 limbs, expected 2 components of 3 limbs"});
    expect_contains(
        error_of<InvalidArgumentError>([&] { gpu.multiply_relinearize_rescale(ctx, two, two, two, rk); }),
        {"multiply_relinearize_rescale", "output has 2 components of 3 limbs, expected 2 components of 2 limbs"});
    const PolyArg bottom{in.get(), 2, 1};
    expect_contains(
        error_of<InvalidArgumentError>([&] { gpu.multiply_relinearize_rescale(ctx, bottom, bottom, bottom, rk); }),
        {"multiply_relinearize_rescale", "level 0"});
    std::vector<u64> words(w.words(3, limbs));
    gpu.download(*out, words.data(), words.size() * sizeof(u64));
    EXPECT_TRUE(std::all_of(words.begin(), words.end(), [](u64 x) { return x == poison; }));
    EXPECT_NO_THROW(gpu.multiply(ctx, product, two, two));
    EXPECT_NO_THROW(gpu.synchronize());
  }
}

}  // namespace
}  // namespace fhelium::test
