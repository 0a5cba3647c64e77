// The canonical-embedding CKKS encoder (host side).
#pragma once

#include <complex>
#include <memory>
#include <span>
#include <vector>

#include "fhelium/context.hpp"
#include "fhelium/value.hpp"

namespace fhelium {

class Encoder {
 public:
  explicit Encoder(std::shared_ptr<const Context> context);

  // Encodes `values` into a plaintext at `level` and `scale`. The slot count
  // is values.size() rounded up to a power of two (at most N/2); missing
  // slots are zero and a sparse slot count repeats across the N/2 slots.
  HostValue encode(std::span<const std::complex<double>> values, int level, double scale,
                   Domain domain = Domain::ntt) const;
  HostValue encode(std::span<const double> values, int level, double scale,
                   Domain domain = Domain::ntt) const;
  // A plaintext whose every slot holds the real constant `value`.
  HostValue encode_constant(double value, int level, double scale, Domain domain = Domain::ntt) const;

  // Decodes the first `slots` slots (a power of two <= N/2) of a plaintext.
  std::vector<std::complex<double>> decode(const HostValue& plaintext, std::size_t slots) const;
  std::vector<std::complex<double>> decode(const HostValue& plaintext) const;

  // round(value) reduced modulo q, exact for any finite double.
  static u64 round_to_residue(double value, const Modulus& q);

 private:
  void special_fft(std::vector<std::complex<double>>& values) const;
  void special_inverse_fft(std::vector<std::complex<double>>& values) const;

  std::shared_ptr<const Context> context_;
  std::vector<std::complex<double>> roots_;   // exp(2 pi i k / 2N), k = 0..2N
  std::vector<std::uint64_t> rotation_group_; // 5^j mod 2N
};

// The clear counterpart of Engine::rotate: slot i of the result is slot
// i + step of `slots`, indices modulo the slot count (a negative step rotates
// right).
std::vector<std::complex<double>> rotate_slots(std::span<const std::complex<double>> slots, long step);

}  // namespace fhelium
