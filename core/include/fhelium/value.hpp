// The exact state of every value, and host-side values (residues in memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fhelium/backend/modarith.hpp"
#include "fhelium/params.hpp"

namespace fhelium {

class Context;

enum class Domain : std::uint8_t { coefficient, ntt };
enum class Basis : std::uint8_t { Q, QP };

std::string to_string(Domain d);
std::string to_string(Basis b);

// Whether two scales are the same scale: scales are doubles that follow the
// same arithmetic on every path, so equal ones agree to rounding (relative
// 1e-9). The one tolerance of every state check.
bool same_scale(double a, double b);

struct ValueState {
  std::uint64_t context_id = 0;
  WordSize word_size = WordSize::bits64;
  int level = 0;  // active primes: Context::level_basis(level) (q_0 .. q_level with 64-bit words)
  double scale = 1.0;
  Domain domain = Domain::ntt;
  Basis basis = Basis::Q;
  int components = 2;       // 1: plaintext, 2: ciphertext, 3: after multiply

  // Limbs per component: the level's Q primes, plus the special primes for basis QP.
  int limbs(const Context& context) const;
  // The key limb (index into Context::key_modulus) of limb `limb`: the
  // level's Q primes, then the P primes for basis QP.
  int key_limb(const Context& context, int limb) const;
  std::size_t words(const Context& context) const;
  std::string describe() const;
  bool operator==(const ValueState&) const = default;
};

// Residues in host memory, `components x limbs x N`, limb-major.
struct HostValue {
  ValueState state;
  std::vector<u64> data;

  u64* limb(const Context& context, int component, int limb);
  const u64* limb(const Context& context, int component, int limb) const;
  // XXH3-64 of the residues: equal digests for equal residues, to compare
  // runs (devices, backends) without moving the values.
  std::uint64_t residue_digest() const;
};

// A value held by a backend: its exact state and its residues (the Buffer
// is the backend's, fhelium/backend/backend.hpp).
class Buffer;
struct Value {
  ValueState state;
  std::shared_ptr<Buffer> buffer;
};
struct Ciphertext : Value {};
struct Plaintext : Value {};

}  // namespace fhelium
