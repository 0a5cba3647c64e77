// The CSPRNG (ChaCha20 keystream) and the samplers CKKS needs. Seeded from
// the operating system unless a seed is given for reproducible tests.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fhelium/backend/modarith.hpp"

namespace fhelium {

using Seed = std::array<std::uint8_t, 32>;

class Csprng {
 public:
  Csprng();                        // seed from getrandom(2)
  explicit Csprng(const Seed& seed);
  ~Csprng();
  Csprng(const Csprng&) = delete;
  Csprng& operator=(const Csprng&) = delete;

  void fill(void* out, std::size_t bytes);
  std::uint64_t next_u64();
  // 32 bytes of the stream: the seed of another, independent Csprng.
  Seed next_seed();
  // Uniform in [0, bound) by rejection; bound >= 1.
  std::uint64_t uniform(std::uint64_t bound);
  // Fills `out` with values uniform in [0, bound), bound >= 1: masked
  // rejection sampling, no division.
  void fill_uniform(std::span<std::uint64_t> out, std::uint64_t bound);
  // Uniform in (0, 1], 53 random bits.
  double uniform_open01();

  static Seed os_seed();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Uniform ternary coefficients in {-1, 0, 1}.
std::vector<std::int8_t> sample_ternary(Csprng& rng, std::size_t n);
// Exactly `hamming_weight` (<= n) non-zero coefficients, each +-1.
std::vector<std::int8_t> sample_sparse_ternary(Csprng& rng, std::size_t n, int hamming_weight);
// Rounded Gaussian, standard deviation sigma, clipped at 6 sigma.
std::vector<std::int64_t> sample_gaussian(Csprng& rng, std::size_t n, double sigma);

inline constexpr double error_stddev = 3.19;

}  // namespace fhelium
