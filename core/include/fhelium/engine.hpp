// The Engine: eager CKKS operations on backend values. Every operand's state
// is validated before any work; nothing is implicit (multiply does not
// relinearize, add requires equal levels and scales). The helpers at the end
// that do the bookkeeping are separately named.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "fhelium/backend/backend.hpp"
#include "fhelium/context.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/value.hpp"

namespace fhelium {

class Engine {
 public:
  Engine(std::shared_ptr<const Context> context, std::shared_ptr<Backend> backend);

  const Context& context() const { return *context_; }
  const std::shared_ptr<const Context>& context_ptr() const { return context_; }
  Backend& backend() const { return *backend_; }
  const std::shared_ptr<Backend>& backend_ptr() const { return backend_; }

  // Transfers.
  Ciphertext upload_ciphertext(const HostValue& value) const;
  Plaintext upload_plaintext(const HostValue& value) const;
  HostValue download(const Value& value) const;
  RelinKey upload_relinearization_key(const HostSwitchKey& key) const;
  // A key from KeyGenerator::switching_key.
  SwitchKey upload_switching_key(const HostSwitchKey& key) const;
  // Galois keys for every element in `keys` (gathered by the caller).
  GaloisKeys upload_galois_keys(std::span<const HostSwitchKey> keys) const;
  // Written by `fill` straight into backend memory (Backend::upload_filled),
  // with no host copy: the path of load_ciphertext(in, engine) and of the
  // other loaders into an engine. The state is checked as upload_ciphertext
  // checks a host value's.
  Ciphertext upload_ciphertext(const ValueState& state, const Backend::ChunkFill& fill) const;
  RelinKey upload_relinearization_key(const Backend::ChunkFill& fill) const;

  // Addition and subtraction (equal level, scale and domain).
  Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
  Ciphertext add(const Ciphertext& a, const Plaintext& b) const;
  Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;
  Ciphertext sub(const Ciphertext& a, const Plaintext& b) const;
  Ciphertext negate(const Ciphertext& a) const;
  void add_inplace(Ciphertext& a, const Ciphertext& b) const;
  void sub_inplace(Ciphertext& a, const Ciphertext& b) const;
  // Adds a real constant, encoded at the ciphertext's scale.
  Ciphertext add_scalar(const Ciphertext& a, double value) const;
  Ciphertext sub_scalar(const Ciphertext& a, double value) const;
  // Sum of a non-empty batch of ciphertexts with identical state.
  Ciphertext sum(std::span<const Ciphertext> values) const;

  // Multiplication.
  Ciphertext multiply(const Ciphertext& a, const Ciphertext& b) const;       // 3 components
  Ciphertext relinearize(const Ciphertext& a, const RelinKey& key) const;    // 3 -> 2
  // relinearize(multiply(a, b)) in one backend call (fused where the backend can).
  Ciphertext multiply_relinearize(const Ciphertext& a, const Ciphertext& b, const RelinKey& key) const;
  Ciphertext multiply_plain(const Ciphertext& a, const Plaintext& p) const;  // scales multiply
  // a_0 p_0 + a_1 p_1 + ... in one backend call (one pass where the backend
  // fuses it): the products' levels, domains and scales must agree.
  Ciphertext multiply_plain_sum(std::span<const Ciphertext> a, std::span<const Plaintext> p) const;
  // multiply_plain_sum(a[g], p[g]) for every group g in one backend call
  // (one pass where the backend fuses it; a linear transform's giant groups,
  // which read the same baby rotations): every group at the first's level,
  // with its components.
  std::vector<Ciphertext> multiply_plain_sums(std::span<const std::span<const Ciphertext>> a,
                                              std::span<const std::span<const Plaintext>> p) const;
  // Multiplies by round(value * scalar_scale); the result's scale is a.scale * scalar_scale.
  Ciphertext multiply_scalar(const Ciphertext& a, double value, double scalar_scale) const;
  // multiply_scalar(a_0, values_0, scalar_scales_0) + ... in one backend call
  // (one pass where the backend fuses it), the same residues as the separate
  // calls: the products' levels, domains and scales must agree.
  Ciphertext multiply_scalar_sum(std::span<const Ciphertext> a, std::span<const double> values,
                                 std::span<const double> scalar_scales) const;
  // Multiplies by an integer; the scale is unchanged.
  Ciphertext multiply_integer(const Ciphertext& a, std::int64_t value) const;

  // Levels.
  Ciphertext rescale(const Ciphertext& a) const;  // level - 1, scale / Context::rescale_divisor(level)
  // The same message and scale at a lower level. Where that level holds a
  // terminal prime a's lacks (the 32-bit family), one rescale per level
  // after a product by the integer nearest its divisor: the scale is kept
  // within same_scale. A plaintext cannot gain a prime: StateError.
  Ciphertext drop_to_level(const Ciphertext& a, int level) const;
  Plaintext drop_to_level(const Plaintext& p, int level) const;
  // Bootstrapping's ModRaise: a two-component ciphertext at level 0 read as
  // integers (centered residues mod q_0) at the top level, in a's domain and
  // with a's scale. It then decrypts to m + q_0 I for a small integer
  // polynomial I (|I| <= (h + 1) / 2 for a secret of Hamming weight h).
  Ciphertext mod_raise(const Ciphertext& a) const;

  // Rotations (left by `step` slots; negative steps rotate right).
  Ciphertext rotate(const Ciphertext& a, long step, const GaloisKeys& keys) const;
  Ciphertext conjugate(const Ciphertext& a, const GaloisKeys& keys) const;
  std::vector<Ciphertext> rotate_hoisted(const Ciphertext& a, std::span<const long> steps,
                                         const GaloisKeys& keys) const;
  // rotate(a_0, steps_0) + rotate(a_1, steps_1) + ... with one ModDown for
  // all the key switches (a linear transform's giant rotations): one
  // rounding instead of one per term, so not the residues of the separate
  // calls. Terms at one level and scale; each step needs its exact key; a
  // step of 0 adds its term. Backends without it (!supports_rotate_sum()):
  // BackendError before anything runs.
  Ciphertext rotate_sum(std::span<const Ciphertext> a, std::span<const long> steps, const GaloisKeys& keys) const;
  // Galois elements `rotate` can use for `step`: the exact key when present,
  // otherwise a decomposition into power-of-two steps (throws MissingKeyError
  // naming the keys when neither is available).
  std::vector<std::uint32_t> rotation_plan(long step, const GaloisKeys& keys) const;

  // The same message under the key's target secret (a two-component NTT
  // ciphertext; one key switch, no level).
  Ciphertext key_switch(const Ciphertext& a, const SwitchKey& key) const;

  // Domains.
  Ciphertext to_ntt(const Ciphertext& a) const;
  Ciphertext to_coefficient(const Ciphertext& a) const;

  // Bookkeeping helpers: multiply, relinearize and rescale in one call.
  Ciphertext multiply_relinearize_rescale(const Ciphertext& a, const Ciphertext& b,
                                          const RelinKey& key) const;

 private:
  Ciphertext make_ciphertext(const ValueState& state) const;
  // The checked state of multiply(a, b) (3 components), for `what`.
  ValueState multiply_state(const char* what, const Ciphertext& a, const Ciphertext& b) const;
  void check_relin_key(const RelinKey& key, const char* what) const;
  Ciphertext rotate_by_element(const Ciphertext& a, std::uint32_t element, const GaloisKeys& keys) const;
  const SwitchKey& galois_key(const GaloisKeys& keys, std::uint32_t element, long step) const;
  void check_own(const Value& v, const char* what) const;
  // The state of a x p after multiply_plain's checks (ownership, one-component
  // plaintext, NTT domain, equal levels).
  ValueState plain_product_state(const char* op, const Ciphertext& a, const Plaintext& p) const;
  // The state of sum a_i p_i, after checking its terms (multiply_plain_sum's rules).
  ValueState plain_sum_state(const std::string& op, std::span<const Ciphertext> a, std::span<const Plaintext> p) const;
  // Both operands own, same level, scale and domain; b has b_components.
  void check_addable(const char* op, const Value& a, const Value& b, int b_components) const;
  // A two-component NTT-domain ciphertext of this context.
  void check_rotatable(const char* op, const Ciphertext& a) const;
  template <class V>
  V dropped(const V& v, int level) const;
  PolyArg arg(const Value& v) const;
  KeyArg arg(const SwitchKey& k) const;
  std::vector<u64> constant_residues(double scaled_value, int level) const;

  std::shared_ptr<const Context> context_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<BackendContext> prepared_;
};

}  // namespace fhelium
