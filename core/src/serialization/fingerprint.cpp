// The context fingerprint: SHA-256 over the parameters that decide whether a
// residue means the same thing in two processes (docs/serialization.md).
#include <openssl/evp.h>

#include <bit>
#include <vector>

#include "fhelium/error.hpp"
#include "fhelium/serialization.hpp"
#include "serialization/little_endian.hpp"

namespace fhelium {
namespace {

template <class T>
void append(std::vector<std::uint8_t>& out, T value) {
  std::uint8_t bytes[sizeof(T)];
  serialization::store_le(bytes, value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

Fingerprint context_fingerprint(const Context& context) {
  const CkksParameters& params = context.params();
  std::vector<std::uint8_t> bytes;
  append<std::uint64_t>(bytes, context.ring_degree());
  append<std::uint32_t>(bytes, static_cast<std::uint32_t>(context.q().size()));
  for (const Modulus& q : context.q()) append<std::uint64_t>(bytes, q.value);
  append<std::uint32_t>(bytes, static_cast<std::uint32_t>(context.p().size()));
  for (const Modulus& p : context.p()) append<std::uint64_t>(bytes, p.value);
  append<std::uint8_t>(bytes, static_cast<std::uint8_t>(context.word_size()));
  append<std::uint64_t>(bytes, std::bit_cast<std::uint64_t>(params.scale));
  append<std::uint8_t>(bytes, params.secret == SecretDistribution::gaussian ? 1 : 0);
  append<std::uint32_t>(bytes, static_cast<std::uint32_t>(params.hamming_weight));
  append<std::uint32_t>(bytes, static_cast<std::uint32_t>(params.security_bits));
  // Only when there are any, so that the fingerprints of chains without them stay as they were.
  if (params.wide_levels != 0) append<std::uint8_t>(bytes, static_cast<std::uint8_t>(params.wide_levels));
  Fingerprint out{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &length, EVP_sha256(), nullptr) != 1 || length != out.size()) {
    throw Error("SHA-256 of the context parameters failed (OpenSSL EVP_Digest)");
  }
  return out;
}

std::string to_hex(const Fingerprint& fingerprint, std::size_t bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < std::min(bytes, fingerprint.size()); ++i) {
    out += digits[fingerprint[i] >> 4];
    out += digits[fingerprint[i] & 15];
  }
  return out;
}

}  // namespace fhelium
