#include "fhelium/random.hpp"

#include <openssl/evp.h>
#include <sys/random.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "fhelium/error.hpp"

namespace fhelium {

// A ChaCha20 keystream (OpenSSL) keyed by the seed, read in blocks.
struct Csprng::Impl {
  EVP_CIPHER_CTX* cipher = nullptr;
  std::uint8_t block[4096];
  std::size_t used = sizeof(block);

  explicit Impl(const Seed& seed) {
    cipher = EVP_CIPHER_CTX_new();
    const std::uint8_t iv[16] = {};
    if (cipher == nullptr || EVP_EncryptInit_ex(cipher, EVP_chacha20(), nullptr, seed.data(), iv) != 1) {
      EVP_CIPHER_CTX_free(cipher);
      throw Error("could not initialise the ChaCha20 keystream (OpenSSL EVP_chacha20)");
    }
  }
  ~Impl() {
    OPENSSL_cleanse(block, sizeof(block));
    EVP_CIPHER_CTX_free(cipher);
  }
  void refill() {
    static const std::uint8_t zeros[sizeof(block)] = {};
    int written = 0;
    if (EVP_EncryptUpdate(cipher, block, &written, zeros, static_cast<int>(sizeof(block))) != 1 ||
        written != static_cast<int>(sizeof(block))) {
      throw Error("ChaCha20 keystream generation failed");
    }
    used = 0;
  }
};

Seed Csprng::os_seed() {
  Seed seed{};
  std::size_t got = 0;
  while (got < seed.size()) {
    const ssize_t r = getrandom(seed.data() + got, seed.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  return seed;
}

Csprng::Csprng() : Csprng(os_seed()) {}
Csprng::Csprng(const Seed& seed) : impl_(std::make_unique<Impl>(seed)) {}
Csprng::~Csprng() = default;

void Csprng::fill(void* out, std::size_t bytes) {
  auto* dst = static_cast<std::uint8_t*>(out);
  while (bytes > 0) {
    if (impl_->used == sizeof(impl_->block)) impl_->refill();
    const std::size_t take = std::min(bytes, sizeof(impl_->block) - impl_->used);
    std::memcpy(dst, impl_->block + impl_->used, take);
    impl_->used += take;
    dst += take;
    bytes -= take;
  }
}

std::uint64_t Csprng::next_u64() {
  std::uint64_t x;
  fill(&x, sizeof(x));
  return x;
}

Seed Csprng::next_seed() {
  Seed seed;
  fill(seed.data(), seed.size());
  return seed;
}

std::uint64_t Csprng::uniform(std::uint64_t bound) {
  if (bound == 0) throw InvalidArgumentError("uniform bound 0: expected a bound >= 1");
  // Reject the top partial interval so every residue is equally likely.
  const std::uint64_t limit = bound * (~std::uint64_t{0} / bound);
  for (;;) {
    const std::uint64_t x = next_u64();
    if (x < limit) return x % bound;
  }
}

void Csprng::fill_uniform(std::span<std::uint64_t> out, std::uint64_t bound) {
  if (bound == 0) throw InvalidArgumentError("uniform bound 0: expected a bound >= 1");
  const std::uint64_t mask = bound == 1 ? 0 : ~std::uint64_t{0} >> std::countl_zero(bound - 1);
  std::uint64_t block[512];
  std::size_t used = std::size(block);
  for (std::size_t i = 0; i < out.size();) {
    if (used == std::size(block)) {
      fill(block, sizeof(block));
      used = 0;
    }
    const std::uint64_t x = block[used++] & mask;
    if (x < bound) out[i++] = x;  // accepted with probability > 1/2
  }
}

double Csprng::uniform_open01() {
  return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53;
}

std::vector<std::int8_t> sample_ternary(Csprng& rng, std::size_t n) {
  std::vector<std::int8_t> out(n);
  std::size_t i = 0;
  std::uint8_t bytes[256];
  while (i < n) {
    rng.fill(bytes, sizeof(bytes));
    for (std::uint8_t b : bytes) {
      if (b >= 255 || i == n) continue;  // 255 = 3 * 85: reject to stay uniform
      out[i++] = static_cast<std::int8_t>(static_cast<int>(b % 3) - 1);
    }
  }
  return out;
}

std::vector<std::int8_t> sample_sparse_ternary(Csprng& rng, std::size_t n, int hamming_weight) {
  if (hamming_weight < 0 || static_cast<std::size_t>(hamming_weight) > n) {
    throw InvalidArgumentError("hamming weight " + std::to_string(hamming_weight) + " is out of range: expected 0.." +
                               std::to_string(n));
  }
  std::vector<std::int8_t> out(n, 0);
  int placed = 0;
  while (placed < hamming_weight) {
    const auto index = static_cast<std::size_t>(rng.uniform(n));
    if (out[index] != 0) continue;
    out[index] = (rng.next_u64() & 1) ? 1 : -1;
    ++placed;
  }
  return out;
}

std::vector<std::int64_t> sample_gaussian(Csprng& rng, std::size_t n, double sigma) {
  std::vector<std::int64_t> out(n);
  const double bound = 6.0 * sigma;
  for (std::size_t i = 0; i < n;) {
    // Box-Muller: two independent normals per draw.
    const double radius = std::sqrt(-2.0 * std::log(rng.uniform_open01()));
    const double angle = 2.0 * std::numbers::pi * rng.uniform_open01();
    for (double z : {radius * std::cos(angle), radius * std::sin(angle)}) {
      const double x = std::round(z * sigma);
      if (std::fabs(x) <= bound && i < n) out[i++] = static_cast<std::int64_t>(x);
    }
  }
  return out;
}

}  // namespace fhelium
