// CKKS bootstrapping: a ciphertext at level 0 back at a high level with the
// same message, as one circuit of the library.
//
// Stages (full slots, n = N/2):
//   1. scaling to the message ratio: multiply_integer by M so that the
//      coefficients M m are about q_0 / message_ratio (no level);
//   2. ModRaise: the level-0 residues read as integers at the top level; the
//      plaintext becomes c = M m + q_0 I with |I| <= K (K = (h + 1) / 2 for a
//      secret of Hamming weight h: |c_0 + c_1 s| <= (h + 1) q_0 / 2). Under
//      a dense secret it runs on an ephemeral sparse one (the sparse-secret
//      encapsulation, below);
//   3. CoeffToSlot: the encoder's inverse special FFT in
//      `coeff_to_slot_levels` linear transforms (special_fft.hpp), scaled so
//      that the slots hold (c_k + i c_(N/2+k)) / (2 q_0 K') with K' = K + 1,
//      then split into real and imaginary parts by a conjugation; the
//      imaginary part is multiplied by -i, a monomial (no level);
//   4. EvalMod on both parts: t = c / q_0 = K' y, sin(2 pi t) =
//      cos(2 pi (t - 1/4)) from a Chebyshev interpolant of
//      cos(2 pi (K' y - 1/4) / 2^r) on [-1, 1] and r double-angle steps
//      cos(2x) = 2 cos(x)^2 - 1; sin(2 pi t) = sin(2 pi M m / q_0), and
//      with the arcsine correction u + u^3 / 6 of u = sin(2 pi t);
//   5. SlotToCoeff: the parts recombined (times i, no level) and the special
//      FFT in `slot_to_coeff_levels` linear transforms, scaled by
//      q_0 / (2 pi Delta M) so that the slots hold the message again.
//
// Sparse slots (n < N/2, the message a polynomial in X^g, g = N / 2n): after
// ModRaise the trace, log2(g) rotations by n, 2n, .., N/4 added, keeps the
// coefficients at multiples of g (times g) and removes the others; the
// transforms are n x n, the last CoeffToSlot one writes [w; 0] on a period
// of 2n, so that real and imaginary parts share one ciphertext [Re; Im]
// (one rotation by n) and one EvalMod; the first SlotToCoeff matrix reads
// both halves ([M | i M]).
//
// Levels: coeff_to_slot_levels + ceil(log2(cosine_degree + 1)) + double_angle
// (+ 2 with the arcsine correction) + slot_to_coeff_levels, from the top
// level; the output has exactly the output scale. Precision is set by the
// sine's curvature (what the arcsine correction leaves of it), the
// interpolant, and EvalMod's noise against the signal 2 pi M m / q_0
// (docs/bootstrapping.md).
#pragma once

#include <memory>
#include <optional>

#include "fhelium/engine.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/runtime/program.hpp"
#include "fhelium/sparse_encapsulation.hpp"

namespace fhelium::circuits {

using runtime::ProgramBuilder;
using runtime::ValueRef;

struct BootstrapConfig {
  // The message's slot count n: a power of two in 2..N/2; 0: N/2 (full
  // slots). The input must be an encoding of n slots (repeated over the N/2,
  // as the encoder packs them); the output is one too.
  std::size_t slots = 0;
  int coeff_to_slot_levels = 3;  // 1 .. log2(slots)
  int slot_to_coeff_levels = 3;  // 1 .. log2(slots)
  int double_angle = 2;          // r
  // The Chebyshev interpolant's degree: 55 is within 1.4e-13 of the cosine
  // for K' = 17, r = 2, with 3 key switches fewer per EvalMod part than 63
  // (docs/bootstrapping.md).
  int cosine_degree = 55;
  // The bound K on ModRaise's overflow |I|; 0: (h + 1) / 2 from the
  // context's sparse secret of Hamming weight h, or from the ephemeral one.
  int overflow_bound = 0;
  // q_0 over the message's coefficients after the integer up-scaling; 0:
  // 128 from N = 2^16 on, where EvalMod's noise is what limits precision
  // (a larger signal against it), 256 below, where the sine's curvature is.
  double message_ratio = 0;
  // EvalMod ends with u + u^3 / 6 (arcsin(u) to third order, u = sin(2 pi x)),
  // which removes the sine's curvature to (2 pi x)^4 * 3 / 40, relative: two
  // more levels for a smaller message ratio and a larger signal.
  bool arcsine_correction = true;
  // The ephemeral secret's Hamming weight under the sparse-secret
  // encapsulation (SparseEncapsulationKeys sets it): K = (h + 1) / 2.
  int ephemeral_hamming_weight = 32;
  // Full slots of real messages at one EvalMod instead of two: x + conj(x)
  // before ModRaise (so the result is the real part of any input), EvalMod
  // on the real parts of the coefficients only, and y + conj(y) after
  // SlotToCoeff (two key switches at the bottom levels).
  bool real_only = false;
  // The transforms sum their giant groups by Horner's rule
  // (LinearTransform::with_horner_giants): fewer rotation keys, the same
  // rotations, a longer chain of dependent key switches.
  bool horner_giants = false;
  // Each transform's giant rotations as one rotate_sum
  // (LinearTransform::with_rotate_sum): one ModDown per transform instead
  // of one per giant rotation, the same keys, other residues. Unset: on
  // where the Engine's backend has rotate_sum (Bootstrapper), off for
  // bootstrap_builder alone.
  std::optional<bool> rotate_sums;
  std::optional<double> output_scale;  // default: the context's scale

  // Levels consumed: coeff_to_slot_levels + EvalMod + slot_to_coeff_levels.
  int depth() const;
  int eval_mod_depth() const;
};

// Parameters laid out for bootstrapping at ring degree 2^log_ring_degree:
// q_0 of 60 bits, `user_levels` primes of 40 bits (scale 2^40), then the
// primes the bootstrap consumes from the top: SlotToCoeff's of 40 bits,
// EvalMod's and CoeffToSlot's of 61 bits (EvalMod's precision is set by the
// scale it works at), and special primes of 61 bits for about five
// key-switching digits. The secret is dense (uniform ternary), so the 2025
// table applies (N = 2^16 with 10 user levels: log2(QP) = 1739 <= 1747) and
// the Bootstrapper needs SparseEncapsulationKeys. Context::create refuses
// parameters outside the table: below N = 2^16 this layout is (2^15 allows
// log2(QP) <= 868).
// WordSize::bits32: the rational chain at 2^40 for the user's and
// SlotToCoeff's levels (at least `user_levels` left, 13 levels need 18
// mains), then CoeffToSlot's and EvalMod's as wide levels (pairs of a
// 30-bit and a 31-bit prime, about 2^61 each), and 31-bit special primes for
// four digits (N = 2^16 with 10 user levels: log2(QP) ~ 1744).
CkksParameters bootstrap_parameters(int log_ring_degree, int user_levels, const BootstrapConfig& config = {},
                                    WordSize word_size = WordSize::bits64);

// The configuration's slot count n on the context (N/2 for slots = 0).
std::size_t bootstrap_slots(const Context& context, const BootstrapConfig& config);

// The configuration's message ratio on the context (the default's choice by N).
double message_ratio(const Context& context, const BootstrapConfig& config);

// The bound K of the configuration on the context: the explicit one, or
// (h + 1) / 2 for the context's sparse secret, or for the ephemeral one of
// the encapsulation when the context's secret is dense.
int overflow_bound(const Context& context, const BootstrapConfig& config);
// Whether the bootstrap goes through the sparse-secret encapsulation: a
// dense secret and no explicit bound.
bool uses_encapsulation(const Context& context, const BootstrapConfig& config);

// The sparse-secret encapsulation for a context with a dense secret
// (fhelium/sparse_encapsulation.hpp: the keys, the modulus they sit at).
using fhelium::SparseEncapsulationKeys;

// On a backend they are runtime::upload_sparse_encapsulation's
// (fhelium/runtime/evaluation_keys.hpp), for Materials::sparse_encapsulation.

// Where each stage's nodes lie in the builder's program: [begin, next begin).
struct BootstrapStages {
  std::size_t mod_raise = 0;      // up-scaling and ModRaise
  std::size_t coeff_to_slot = 0;  // and the real/imaginary split
  std::size_t eval_mod = 0;
  std::size_t slot_to_coeff = 0;  // and the recombination
  std::size_t end = 0;
  // Values at the stage boundaries, for tests and diagnostics: CoeffToSlot's
  // real part after the split, holding (M m + q_0 I) / (q_0 K') per
  // coefficient, and its EvalMod. With sparse slots both are the packed
  // ciphertext [real; imaginary].
  ValueRef coefficients_real;
  ValueRef eval_mod_real;
};

// Appends the bootstrap of x (a ciphertext at any level; dropped to level 0)
// to a bound builder. The result is at level max_level - config.depth() with
// exactly the output scale. With a dense secret its ModRaise is
// mod_raise_encapsulated (linking then needs Materials::sparse_encapsulation).
// InvalidArgumentError, before any node is added, when the context has too
// few levels.
ValueRef bootstrap(ProgramBuilder& b, ValueRef x, const BootstrapConfig& config = {},
                   BootstrapStages* stages = nullptr);

// The bootstrap as a ready callable on one Engine: the program is built and
// linked once (its keys checked, its constants encoded) for inputs of
// `input_scale` (default: the context's scale).
class Bootstrapper {
 public:
  // Every key the bootstrap needs: generate these before constructing.
  static runtime::KeyRequirements required_keys(std::shared_ptr<const Context> context,
                                                const BootstrapConfig& config = {},
                                                std::optional<double> input_scale = std::nullopt);

  // MissingKeyError naming each missing key (with a dense secret: the
  // encapsulation's). The keys are borrowed and must outlive the
  // Bootstrapper, as must the engine.
  Bootstrapper(const Engine& engine, const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
               const BootstrapConfig& config = {}, std::optional<double> input_scale = std::nullopt);
  // For a context with a dense secret, by the sparse-secret encapsulation
  // (its two switching keys are uploaded and owned here).
  Bootstrapper(const Engine& engine, const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
               const SparseEncapsulationKeys& encapsulation, const BootstrapConfig& config = {},
               std::optional<double> input_scale = std::nullopt);

  // x at any level with the input scale (StateError otherwise).
  Ciphertext bootstrap(const Ciphertext& x) const;
  Ciphertext operator()(const Ciphertext& x) const { return bootstrap(x); }

  const runtime::PreparedProgram& program() const { return executable_.prepared(); }
  // The linked program (inputs {"x": level 0}, output "y"): for GraphProgram capture.
  const runtime::Executable& executable() const { return executable_; }
  int output_level() const;
  double output_scale() const;
  // The stages' node ranges in program().program().nodes().
  const BootstrapStages& stages() const { return stages_; }

 private:
  void link_program(const RelinKey& relinearization_key, const GaloisKeys& galois_keys, const BootstrapConfig& config,
                    std::optional<double> input_scale);

  const Engine* engine_;
  // Held by pointer so that the Executable's borrowed address survives a move.
  std::shared_ptr<const runtime::SparseEncapsulation> encapsulation_;  // null without the encapsulation
  runtime::Executable executable_;
  BootstrapStages stages_;
};

}  // namespace fhelium::circuits
