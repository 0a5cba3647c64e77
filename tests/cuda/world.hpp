// One parameter set on the CUDA backend and the CPU backend: keys (relinearization,
// and Galois keys for the steps 1 and -3 and conjugation) uploaded to both,
// encoders, and poisoned device buffers. Shared by the CUDA test executables.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "fhelium/cuda/cuda_backend.hpp"
#include "helpers.hpp"

namespace fhelium::test {

constexpr u64 poison = ~u64{0};

// Keys, encoders and the two engines for one parameter set (built once per set).
struct World {
  std::shared_ptr<const Context> context;
  Csprng rng;
  KeyGenerator keygen;
  SecretKey sk;
  PublicKey pk;
  Encoder encoder;
  Encryptor encryptor;
  std::shared_ptr<Backend> cpu_backend;
  std::shared_ptr<Backend> gpu_backend;
  Engine cpu;
  Engine gpu;
  std::shared_ptr<BackendContext> gpu_ctx;
  std::vector<long> steps{1, -3};
  std::vector<std::uint32_t> elements;  // steps, then conjugation
  RelinKey cpu_rk, gpu_rk;
  GaloisKeys cpu_gk, gpu_gk;
  std::mt19937_64 message_rng{2024};

  World(const CkksParameters& params, std::uint8_t seed)
      : context(Context::create(params)),
        rng(test_seed(seed)),
        keygen(context, rng),
        sk(keygen.secret_key()),
        pk(keygen.public_key(sk)),
        encoder(context),
        encryptor(context, rng),
        cpu_backend(cpu::make_cpu_backend()),
        gpu_backend(cuda::make_cuda_backend()),
        cpu(context, cpu_backend),
        gpu(context, gpu_backend),
        gpu_ctx(gpu_backend->prepare(context)) {
    const HostSwitchKey relin = keygen.relinearization_key(sk);
    cpu_rk = cpu.upload_relinearization_key(relin);
    gpu_rk = gpu.upload_relinearization_key(relin);
    std::vector<HostSwitchKey> galois;
    for (long s : steps) elements.push_back(context->galois_element(s));
    elements.push_back(context->conjugation_element());
    for (auto g : elements) galois.push_back(keygen.galois_key(sk, g));
    cpu_gk = cpu.upload_galois_keys(galois);
    gpu_gk = gpu.upload_galois_keys(galois);
  }

  std::size_t n() const { return context->ring_degree(); }
  double scale() const { return context->params().scale; }

  Message random_message() {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    Message m(n() / 2);
    for (auto& x : m) x = {d(message_rng), d(message_rng)};
    return m;
  }

  // A GPU buffer of `words` words, every byte 0xFF.
  std::shared_ptr<Buffer> poisoned(std::size_t words) const {
    auto buffer = gpu_backend->allocate(words * sizeof(u64));
    const std::vector<u64> fill(words, poison);
    gpu_backend->upload(*buffer, fill.data(), words * sizeof(u64));
    return buffer;
  }

  std::size_t words(int components, int limbs) const {
    return static_cast<std::size_t>(components) * static_cast<std::size_t>(limbs) * n();
  }
};

}  // namespace fhelium::test
