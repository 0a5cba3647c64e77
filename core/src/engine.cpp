#include "fhelium/engine.hpp"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fhelium/backend/residue_transfer.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/error.hpp"

namespace fhelium {
namespace {

[[noreturn]] void state_error(const std::string& op, const std::string& detail, const ValueState& a,
                              const std::string& field, const std::string& expected, const std::string& got) {
  throw StateError(op + ": " + detail + "; operand state " + a.describe(), StateError::Mismatch{op, field, expected, got});
}

std::string scale_bits(double scale) {
  std::ostringstream s;
  s << "2^" << std::log2(scale);
  return s.str();
}

void require_ntt(const std::string& op, const ValueState& s) {
  if (s.domain != Domain::ntt) {
    state_error(op, "operand is in the coefficient domain, expected the ntt domain", s, "domain", "ntt", "coefficient");
  }
}

void require_components(const std::string& op, const ValueState& s, int components) {
  if (s.components != components) {
    state_error(op, "operand has " + std::to_string(s.components) + " components, expected " +
                        std::to_string(components),
                s, "components", std::to_string(components), std::to_string(s.components));
  }
}

void require_same_level(const std::string& op, const ValueState& a, const ValueState& b) {
  if (a.level != b.level) {
    state_error(op, "operands are at levels " + std::to_string(a.level) + " and " + std::to_string(b.level) +
                        ", expected equal levels (use drop_to_level)",
                b, "level", "equal levels", std::to_string(a.level) + " and " + std::to_string(b.level));
  }
}

// Same level, scale and domain: the rule for add/sub.
void require_aligned(const std::string& op, const ValueState& a, const ValueState& b) {
  require_same_level(op, a, b);
  if (!same_scale(a.scale, b.scale)) {
    const std::string got = scale_bits(a.scale) + " and " + scale_bits(b.scale);
    state_error(op, "operands have scales " + got + ", expected equal scales", b, "scale", "equal scales", got);
  }
  if (a.domain != b.domain) {
    const std::string got = to_string(a.domain) + " and " + to_string(b.domain);
    state_error(op, "operands are in the " + got + " domains, expected the same domain", b, "domain", "the same domain",
                got);
  }
}

void check_rotation_step(const std::string& op, long step, long slots) {
  if (step <= -slots || step >= slots) {
    throw InvalidArgumentError(op + ": rotation step " + std::to_string(step) + " is out of range: expected -" +
                               std::to_string(slots - 1) + ".." + std::to_string(slots - 1));
  }
}

}  // namespace

Engine::Engine(std::shared_ptr<const Context> context, std::shared_ptr<Backend> backend)
    : context_(std::move(context)), backend_(std::move(backend)) {
  if (!context_ || !backend_) throw InvalidArgumentError("Engine needs a context and a backend, got a null pointer");
  prepared_ = backend_->prepare(context_);
}

void Engine::check_own(const Value& v, const char* what) const {
  const ValueState& s = v.state;
  if (s.context_id != context_->id()) {
    state_error(what, "operand belongs to context " + std::to_string(s.context_id) + ", expected context " +
                          std::to_string(context_->id()),
                s, "context", std::to_string(context_->id()), std::to_string(s.context_id));
  }
  if (s.word_size != context_->word_size()) {
    state_error(what, "operand word size differs from the context's", s, "word size",
                std::to_string(static_cast<int>(context_->word_size())), std::to_string(static_cast<int>(s.word_size)));
  }
  if (s.basis != Basis::Q) state_error(what, "operand is in basis QP, expected basis Q", s, "basis", "Q", "QP");
  if (s.level < 0 || s.level > context_->max_level()) {
    state_error(what, "operand level is out of range 0.." + std::to_string(context_->max_level()), s, "level",
                "0.." + std::to_string(context_->max_level()), std::to_string(s.level));
  }
  if (!v.buffer || v.buffer->size_bytes() < s.words(*context_) * stored_word_bytes(s.word_size)) {
    state_error(what, "operand has no storage of the size its state needs", s, "storage",
                std::to_string(s.words(*context_) * stored_word_bytes(s.word_size)) + " bytes",
                std::to_string(v.buffer ? v.buffer->size_bytes() : 0) + " bytes");
  }
}

void Engine::check_addable(const char* op, const Value& a, const Value& b, int b_components) const {
  check_own(a, op);
  check_own(b, op);
  require_aligned(op, a.state, b.state);
  require_components(op, b.state, b_components);
}

void Engine::check_rotatable(const char* op, const Ciphertext& a) const {
  check_own(a, op);
  require_components(op, a.state, 2);
  require_ntt(op, a.state);
}

PolyArg Engine::arg(const Value& v) const {
  return {v.buffer.get(), v.state.components, v.state.limbs(*context_)};
}

KeyArg Engine::arg(const SwitchKey& k) const { return {k.buffer.get(), k.digits}; }

Ciphertext Engine::make_ciphertext(const ValueState& state) const {
  Ciphertext ct;
  ct.state = state;
  ct.buffer = backend_->allocate(state.words(*context_) * stored_word_bytes(state.word_size));
  return ct;
}

std::vector<u64> Engine::constant_residues(double scaled_value, int level) const {
  std::vector<u64> residues(static_cast<std::size_t>(context_->level_basis(level).count));
  for (std::size_t i = 0; i < residues.size(); ++i) {
    residues[i] = Encoder::round_to_residue(scaled_value, context_->level_modulus(level, static_cast<int>(i)));
  }
  return residues;
}

// ---- transfers ----

namespace {
// `words`: the host value's size, when there is one.
void check_host(const Context& ctx, const ValueState& s, std::optional<std::size_t> words, int min_components,
                int max_components, const char* what) {
  if (s.context_id != ctx.id() || s.word_size != ctx.word_size() || s.basis != Basis::Q ||
      s.components < min_components || s.components > max_components || s.level < 0 || s.level > ctx.max_level() ||
      (words && *words != s.words(ctx))) {
    throw StateError(std::string(what) + ": host value " + s.describe() +
                     (words ? " with " + std::to_string(*words) + " words" : std::string()) + " does not fit context " +
                     std::to_string(ctx.id()) + " (expected " + std::to_string(min_components) + ".." +
                     std::to_string(max_components) + " Q-basis components of the matching size, " +
                     std::to_string(static_cast<int>(ctx.word_size())) + "-bit words)");
  }
}

void check_host(const Context& ctx, const HostValue& v, int min_components, int max_components, const char* what) {
  check_host(ctx, v.state, v.data.size(), min_components, max_components, what);
}
}  // namespace

Ciphertext Engine::upload_ciphertext(const HostValue& value) const {
  check_host(*context_, value, 2, 3, "upload_ciphertext");
  Ciphertext ct = make_ciphertext(value.state);
  upload_residues(*backend_, *ct.buffer, value.data, value.state.word_size);
  return ct;
}

Ciphertext Engine::upload_ciphertext(const ValueState& state, const Backend::ChunkFill& fill) const {
  check_host(*context_, state, std::nullopt, 2, 3, "upload_ciphertext");
  Ciphertext ct = make_ciphertext(state);
  upload_residues_filled(*backend_, *ct.buffer, state.words(*context_), state.word_size, fill);
  return ct;
}

Plaintext Engine::upload_plaintext(const HostValue& value) const {
  check_host(*context_, value, 1, 1, "upload_plaintext");
  Plaintext pt;
  pt.state = value.state;
  pt.buffer = backend_->allocate(value.data.size() * stored_word_bytes(value.state.word_size));
  upload_residues(*backend_, *pt.buffer, value.data, value.state.word_size);
  return pt;
}

HostValue Engine::download(const Value& value) const {
  check_own(value, "download");
  HostValue host;
  host.state = value.state;
  host.data.resize(value.state.words(*context_));
  download_residues(*backend_, *value.buffer, host.data, value.state.word_size);
  return host;
}

namespace {
SwitchKey upload_key(Backend& backend, const Context& ctx, const HostSwitchKey& key) {
  const std::size_t expected = ctx.key_words();
  if (key.context_id != ctx.id() || key.digits != ctx.key_digits() || key.data.size() != expected) {
    throw StateError("key of context " + std::to_string(key.context_id) + " with " + std::to_string(key.digits) +
                     " digits and " + std::to_string(key.data.size()) + " words does not fit context " +
                     std::to_string(ctx.id()) + " (expected " + std::to_string(ctx.key_digits()) + " digits, " +
                     std::to_string(expected) + " words)");
  }
  SwitchKey out;
  out.context_id = key.context_id;
  out.digits = key.digits;
  out.buffer = backend.allocate(key.data.size() * stored_word_bytes(ctx.word_size()));
  upload_residues(backend, *out.buffer, key.data, ctx.word_size());
  return out;
}
}  // namespace

RelinKey Engine::upload_relinearization_key(const HostSwitchKey& key) const {
  if (key.galois_element != 0) {
    throw InvalidArgumentError("upload_relinearization_key: got a Galois key (element " +
                               std::to_string(key.galois_element) + "), expected a relinearization key");
  }
  RelinKey rk;
  static_cast<SwitchKey&>(rk) = upload_key(*backend_, *context_, key);
  return rk;
}

RelinKey Engine::upload_relinearization_key(const Backend::ChunkFill& fill) const {
  RelinKey rk;
  rk.context_id = context_->id();
  rk.digits = context_->key_digits();
  const std::size_t words = context_->key_words();
  rk.buffer = backend_->allocate(words * stored_word_bytes(context_->word_size()));
  upload_residues_filled(*backend_, *rk.buffer, words, context_->word_size(), fill);
  return rk;
}

SwitchKey Engine::upload_switching_key(const HostSwitchKey& key) const {
  if (key.galois_element != 0) {
    throw InvalidArgumentError("upload_switching_key: got a Galois key (element " + std::to_string(key.galois_element) +
                               "), expected a key from KeyGenerator::switching_key");
  }
  return upload_key(*backend_, *context_, key);
}

GaloisKeys Engine::upload_galois_keys(std::span<const HostSwitchKey> keys) const {
  GaloisKeys out;
  out.context_id = context_->id();
  for (const auto& key : keys) {
    if (key.galois_element == 0) {
      throw InvalidArgumentError("upload_galois_keys: got a relinearization key, expected Galois keys");
    }
    out.keys[key.galois_element] = upload_key(*backend_, *context_, key);
  }
  return out;
}

// ---- addition ----

Ciphertext Engine::add(const Ciphertext& a, const Ciphertext& b) const {
  check_addable("add", a, b, a.state.components);
  Ciphertext out = make_ciphertext(a.state);
  backend_->add(*prepared_, arg(out), arg(a), arg(b));
  return out;
}

Ciphertext Engine::add(const Ciphertext& a, const Plaintext& b) const {
  check_addable("add_plain", a, b, 1);
  Ciphertext out = make_ciphertext(a.state);
  backend_->add(*prepared_, arg(out), arg(a), arg(b));
  return out;
}

Ciphertext Engine::sub(const Ciphertext& a, const Ciphertext& b) const {
  check_addable("sub", a, b, a.state.components);
  Ciphertext out = make_ciphertext(a.state);
  backend_->sub(*prepared_, arg(out), arg(a), arg(b));
  return out;
}

Ciphertext Engine::sub(const Ciphertext& a, const Plaintext& b) const {
  check_addable("sub_plain", a, b, 1);
  Ciphertext out = make_ciphertext(a.state);
  backend_->sub(*prepared_, arg(out), arg(a), arg(b));
  return out;
}

void Engine::add_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_addable("add_inplace", a, b, a.state.components);
  backend_->add(*prepared_, arg(a), arg(a), arg(b));
}

void Engine::sub_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_addable("sub_inplace", a, b, a.state.components);
  backend_->sub(*prepared_, arg(a), arg(a), arg(b));
}

Ciphertext Engine::negate(const Ciphertext& a) const {
  check_own(a, "negate");
  Ciphertext out = make_ciphertext(a.state);
  backend_->negate(*prepared_, arg(out), arg(a));
  return out;
}

Ciphertext Engine::add_scalar(const Ciphertext& a, double value) const {
  check_own(a, "add_scalar");
  const auto residues = constant_residues(value * a.state.scale, a.state.level);
  Ciphertext out = make_ciphertext(a.state);
  backend_->add_constant(*prepared_, arg(out), arg(a), residues, a.state.domain == Domain::ntt);
  return out;
}

Ciphertext Engine::sub_scalar(const Ciphertext& a, double value) const { return add_scalar(a, -value); }

Ciphertext Engine::sum(std::span<const Ciphertext> values) const {
  if (values.empty()) throw InvalidArgumentError("sum: the batch is empty, expected at least one ciphertext");
  for (const auto& v : values) {
    check_own(v, "sum");
    require_aligned("sum", values[0].state, v.state);
    require_components("sum", v.state, values[0].state.components);
  }
  Ciphertext out = make_ciphertext(values[0].state);
  std::vector<PolyArg> terms;
  for (const auto& v : values) terms.push_back(arg(v));
  backend_->sum_products(*prepared_, arg(out), terms, {});
  return out;
}

ValueState Engine::plain_sum_state(const std::string& op, std::span<const Ciphertext> a,
                                   std::span<const Plaintext> p) const {
  if (a.empty()) throw InvalidArgumentError(op + ": no terms, expected at least one");
  if (a.size() != p.size()) {
    throw InvalidArgumentError(op + ": " + std::to_string(a.size()) + " ciphertexts and " + std::to_string(p.size()) +
                               " plaintexts, expected one plaintext per ciphertext");
  }
  const ValueState s = plain_product_state(op.c_str(), a[0], p[0]);
  for (std::size_t i = 0; i < a.size(); ++i) {
    check_own(a[i], op.c_str());  // before its level: another context's levels say nothing here
    require_same_level(op, s, a[i].state);
    const ValueState product = plain_product_state(op.c_str(), a[i], p[i]);
    require_components(op, a[i].state, s.components);
    require_aligned(op, s, product);  // the products' scales must agree to be summed
  }
  return s;
}

Ciphertext Engine::multiply_plain_sum(std::span<const Ciphertext> a, std::span<const Plaintext> p) const {
  Ciphertext out = make_ciphertext(plain_sum_state("multiply_plain_sum", a, p));
  std::vector<PolyArg> terms, plains;
  for (std::size_t i = 0; i < a.size(); ++i) {
    terms.push_back(arg(a[i]));
    plains.push_back(arg(p[i]));
  }
  backend_->sum_products(*prepared_, arg(out), terms, plains);
  return out;
}

std::vector<Ciphertext> Engine::multiply_plain_sums(std::span<const std::span<const Ciphertext>> a,
                                                    std::span<const std::span<const Plaintext>> p) const {
  if (a.empty()) throw InvalidArgumentError("multiply_plain_sums: no groups, expected at least one");
  if (a.size() != p.size()) {
    throw InvalidArgumentError("multiply_plain_sums: " + std::to_string(a.size()) + " groups of ciphertexts and " +
                               std::to_string(p.size()) + " of plaintexts, expected one of each per group");
  }
  std::vector<Ciphertext> outs;
  std::vector<PolyArg> results, terms, plains;
  std::vector<std::size_t> ends;
  for (std::size_t g = 0; g < a.size(); ++g) {
    const std::string group = "multiply_plain_sums: group " + std::to_string(g);
    const ValueState s = plain_sum_state(group, a[g], p[g]);
    if (g > 0 && (s.level != outs[0].state.level || s.components != outs[0].state.components)) {
      throw StateError(group + " is at level " + std::to_string(s.level) + " with " + std::to_string(s.components) +
                       " components, expected group 0's level " + std::to_string(outs[0].state.level) + " with " +
                       std::to_string(outs[0].state.components) + " (one call takes groups of one shape)");
    }
    outs.push_back(make_ciphertext(s));
    for (std::size_t i = 0; i < a[g].size(); ++i) {
      terms.push_back(arg(a[g][i]));
      plains.push_back(arg(p[g][i]));
    }
    ends.push_back(terms.size());
  }
  for (const Ciphertext& out : outs) results.push_back(arg(out));
  backend_->sum_product_groups(*prepared_, results, terms, plains, ends);
  return outs;
}

// ---- multiplication ----

ValueState Engine::multiply_state(const char* what, const Ciphertext& a, const Ciphertext& b) const {
  check_own(a, what);
  check_own(b, what);
  require_components(what, a.state, 2);
  require_components(what, b.state, 2);
  require_ntt(what, a.state);
  require_ntt(what, b.state);
  require_same_level(what, a.state, b.state);
  ValueState s = a.state;
  s.components = 3;
  s.scale = a.state.scale * b.state.scale;
  return s;
}

Ciphertext Engine::multiply(const Ciphertext& a, const Ciphertext& b) const {
  Ciphertext out = make_ciphertext(multiply_state("multiply", a, b));
  backend_->multiply(*prepared_, arg(out), arg(a), arg(b));
  return out;
}

void Engine::check_relin_key(const RelinKey& key, const char* what) const {
  if (!key.buffer) throw MissingKeyError(std::string(what) + ": no relinearization key was provided");
  if (key.context_id != context_->id()) {
    throw StateError(std::string(what) + ": relinearization key belongs to context " + std::to_string(key.context_id) +
                     ", expected context " + std::to_string(context_->id()));
  }
}

Ciphertext Engine::relinearize(const Ciphertext& a, const RelinKey& key) const {
  check_own(a, "relinearize");
  require_components("relinearize", a.state, 3);
  require_ntt("relinearize", a.state);
  check_relin_key(key, "relinearize");
  ValueState s = a.state;
  s.components = 2;
  Ciphertext out = make_ciphertext(s);
  backend_->relinearize(*prepared_, arg(out), arg(a), arg(key));
  return out;
}

Ciphertext Engine::multiply_relinearize(const Ciphertext& a, const Ciphertext& b, const RelinKey& key) const {
  ValueState s = multiply_state("multiply_relinearize", a, b);
  check_relin_key(key, "multiply_relinearize");
  s.components = 2;
  Ciphertext out = make_ciphertext(s);
  backend_->multiply_relinearize(*prepared_, arg(out), arg(a), arg(b), arg(key));
  return out;
}

ValueState Engine::plain_product_state(const char* op, const Ciphertext& a, const Plaintext& p) const {
  check_own(a, op);
  check_own(p, op);
  require_components(op, p.state, 1);
  require_ntt(op, a.state);
  require_ntt(op, p.state);
  require_same_level(op, a.state, p.state);
  ValueState s = a.state;
  s.scale = a.state.scale * p.state.scale;
  return s;
}

Ciphertext Engine::multiply_plain(const Ciphertext& a, const Plaintext& p) const {
  Ciphertext out = make_ciphertext(plain_product_state("multiply_plain", a, p));
  backend_->multiply_plain(*prepared_, arg(out), arg(a), arg(p));
  return out;
}

namespace {
// a's state after a product by a constant at scalar_scale.
ValueState scalar_product_state(const char* op, const ValueState& a, double scalar_scale) {
  if (!(scalar_scale >= 1.0) || !std::isfinite(scalar_scale)) {
    throw InvalidArgumentError(std::string(op) + ": scalar scale " + std::to_string(scalar_scale) +
                               " is invalid, expected a finite value >= 1");
  }
  ValueState s = a;
  s.scale = a.scale * scalar_scale;
  return s;
}
}  // namespace

Ciphertext Engine::multiply_scalar(const Ciphertext& a, double value, double scalar_scale) const {
  check_own(a, "multiply_scalar");
  Ciphertext out = make_ciphertext(scalar_product_state("multiply_scalar", a.state, scalar_scale));
  backend_->multiply_constant(*prepared_, arg(out), arg(a), constant_residues(value * scalar_scale, a.state.level));
  return out;
}

Ciphertext Engine::multiply_scalar_sum(std::span<const Ciphertext> a, std::span<const double> values,
                                       std::span<const double> scalar_scales) const {
  const char* op = "multiply_scalar_sum";
  if (a.empty()) throw InvalidArgumentError("multiply_scalar_sum: no terms, expected at least one");
  if (values.size() != a.size() || scalar_scales.size() != a.size()) {
    throw InvalidArgumentError("multiply_scalar_sum: " + std::to_string(a.size()) + " ciphertexts, " +
                               std::to_string(values.size()) + " values and " + std::to_string(scalar_scales.size()) +
                               " scalar scales, expected one value and one scalar scale per ciphertext");
  }
  check_own(a[0], op);
  const ValueState s = scalar_product_state(op, a[0].state, scalar_scales[0]);
  std::vector<PolyArg> terms;
  std::vector<u64> residues;
  for (std::size_t i = 0; i < a.size(); ++i) {
    check_own(a[i], op);
    require_components(op, a[i].state, s.components);
    require_aligned(op, s, scalar_product_state(op, a[i].state, scalar_scales[i]));  // the products are summed
    terms.push_back(arg(a[i]));
    const std::vector<u64> r = constant_residues(values[i] * scalar_scales[i], s.level);
    residues.insert(residues.end(), r.begin(), r.end());
  }
  Ciphertext out = make_ciphertext(s);
  backend_->sum_constant_products(*prepared_, arg(out), terms, residues);
  return out;
}

Ciphertext Engine::multiply_integer(const Ciphertext& a, std::int64_t value) const {
  check_own(a, "multiply_integer");
  std::vector<u64> residues(static_cast<std::size_t>(context_->level_basis(a.state.level).count));
  for (std::size_t i = 0; i < residues.size(); ++i) {
    const u64 q = context_->level_modulus(a.state.level, static_cast<int>(i)).value;
    const u64 magnitude = static_cast<u64>(value < 0 ? -(value + 1) : value) + (value < 0 ? 1 : 0);
    residues[i] = value < 0 ? neg_mod(magnitude % q, q) : magnitude % q;
  }
  Ciphertext out = make_ciphertext(a.state);
  backend_->multiply_constant(*prepared_, arg(out), arg(a), residues);
  return out;
}

// ---- levels ----

Ciphertext Engine::rescale(const Ciphertext& a) const {
  check_own(a, "rescale");
  require_ntt("rescale", a.state);
  if (a.state.level == 0) {
    state_error("rescale", "operand is at level 0, expected level >= 1", a.state, "level", ">= 1", "0");
  }
  ValueState s = a.state;
  s.level -= 1;
  s.scale = a.state.scale / context_->rescale_divisor(a.state.level);
  Ciphertext out = make_ciphertext(s);
  backend_->rescale(*prepared_, arg(out), arg(a));
  return out;
}

template <class V>
V Engine::dropped(const V& v, int level) const {
  check_own(v, "drop_to_level");
  if (level < 0 || level > v.state.level) {
    state_error("drop_to_level", "target level " + std::to_string(level) + " is out of range, expected 0.." +
                                     std::to_string(v.state.level),
                v.state, "level", "0.." + std::to_string(v.state.level), std::to_string(level));
  }
  if (!context_->nested(v.state.level, level)) {
    state_error("drop_to_level",
                "level " + std::to_string(level) + " holds a prime level " + std::to_string(v.state.level) +
                    " lacks (the 32-bit family's rational chain): a plaintext cannot gain it, encode it at that level",
                v.state, "level", "a level whose primes level " + std::to_string(v.state.level) + " holds",
                std::to_string(level));
  }
  V out;
  out.state = v.state;
  out.state.level = level;
  out.buffer = backend_->allocate(out.state.words(*context_) * stored_word_bytes(out.state.word_size));
  backend_->drop_limbs(*prepared_, arg(out), arg(v));
  return out;
}

Ciphertext Engine::drop_to_level(const Ciphertext& a, int level) const {
  check_own(a, "drop_to_level");  // a's level is valid before its basis is read
  if (level < 0 || level > a.state.level || context_->nested(a.state.level, level)) return dropped(a, level);
  // The rational chain: `level` holds a terminal prime a's level lacks. Down
  // to the nearest level whose primes a holds, then per level a rescale that
  // keeps the scale: times the integer nearest the rescale's divisor first.
  require_ntt("drop_to_level", a.state);  // a rescale on the way
  int via = level;
  while (!context_->nested(a.state.level, via)) ++via;
  Ciphertext x = dropped(a, via);
  for (int l = via; l > level; --l) x = rescale(multiply_scalar(x, 1.0, std::round(context_->rescale_divisor(l))));
  return x;
}

Ciphertext Engine::mod_raise(const Ciphertext& a) const {
  check_own(a, "mod_raise");
  require_components("mod_raise", a.state, 2);
  if (a.state.level != 0) {
    state_error("mod_raise", "operand is at level " + std::to_string(a.state.level) + ", expected level 0", a.state,
                "level", "0", std::to_string(a.state.level));
  }
  ValueState raised = a.state;
  raised.level = context_->max_level();
  raised.domain = Domain::coefficient;
  Ciphertext out = make_ciphertext(raised);
  if (a.state.domain == Domain::coefficient) {
    backend_->mod_raise(*prepared_, arg(out), arg(a));
    return out;
  }
  const Ciphertext coefficients = to_coefficient(a);
  backend_->mod_raise(*prepared_, arg(out), arg(coefficients));
  return to_ntt(out);
}
Plaintext Engine::drop_to_level(const Plaintext& p, int level) const { return dropped(p, level); }

// ---- rotations ----

const SwitchKey& Engine::galois_key(const GaloisKeys& keys, std::uint32_t element, long step) const {
  if (keys.context_id != context_->id() && !keys.keys.empty()) {
    throw StateError("Galois keys belong to context " + std::to_string(keys.context_id) + ", expected context " +
                     std::to_string(context_->id()));
  }
  const auto it = keys.keys.find(element);
  if (it == keys.keys.end()) {
    throw MissingKeyError("no Galois key for " +
                          (element == context_->conjugation_element() ? std::string("conjugation")
                                                                      : "rotation step " + std::to_string(step)) +
                          " (Galois element " + std::to_string(element) + ")");
  }
  return it->second;
}

std::vector<std::uint32_t> Engine::rotation_plan(long step, const GaloisKeys& keys) const {
  const long slots = static_cast<long>(context_->ring_degree() / 2);
  check_rotation_step("rotate", step, slots);
  const long normalized = ((step % slots) + slots) % slots;
  if (normalized == 0) return {};
  const std::uint32_t exact = context_->galois_element(step);
  if (keys.contains(exact)) return {exact};
  std::vector<std::uint32_t> plan;
  std::string missing;
  for (long bit = 1; bit < slots; bit <<= 1) {
    if ((normalized & bit) == 0) continue;
    const std::uint32_t element = context_->galois_element(bit);
    if (!keys.contains(element)) missing += (missing.empty() ? "" : ", ") + std::to_string(bit);
    plan.push_back(element);
  }
  if (!missing.empty()) {
    throw MissingKeyError("no Galois key for rotation step " + std::to_string(step) +
                          ", and it cannot be composed from power-of-two keys: missing steps " + missing);
  }
  return plan;
}

Ciphertext Engine::rotate_by_element(const Ciphertext& a, std::uint32_t element, const GaloisKeys& keys) const {
  const SwitchKey& key = galois_key(keys, element, 0);
  Ciphertext out = make_ciphertext(a.state);
  backend_->rotate(*prepared_, arg(out), arg(a), element, arg(key));
  return out;
}

Ciphertext Engine::rotate(const Ciphertext& a, long step, const GaloisKeys& keys) const {
  check_rotatable("rotate", a);
  const auto plan = rotation_plan(step, keys);
  if (plan.empty()) return drop_to_level(a, a.state.level);
  Ciphertext current = rotate_by_element(a, plan[0], keys);
  for (std::size_t i = 1; i < plan.size(); ++i) current = rotate_by_element(current, plan[i], keys);
  return current;
}

Ciphertext Engine::conjugate(const Ciphertext& a, const GaloisKeys& keys) const {
  check_rotatable("conjugate", a);
  return rotate_by_element(a, context_->conjugation_element(), keys);
}

std::vector<Ciphertext> Engine::rotate_hoisted(const Ciphertext& a, std::span<const long> steps,
                                               const GaloisKeys& keys) const {
  check_rotatable("rotate_hoisted", a);
  const long slots = static_cast<long>(context_->ring_degree() / 2);
  std::vector<Ciphertext> results(steps.size());
  std::vector<PolyArg> outs;
  std::vector<std::uint32_t> elements;
  std::vector<KeyArg> key_args;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const long step = steps[i];
    check_rotation_step("rotate_hoisted", step, slots);
    if (step % slots == 0) continue;
    const std::uint32_t element = context_->galois_element(step);
    key_args.push_back(arg(galois_key(keys, element, step)));
    elements.push_back(element);
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    results[i] = make_ciphertext(a.state);
    if (steps[i] % slots == 0) {
      backend_->drop_limbs(*prepared_, arg(results[i]), arg(a));  // rotation by 0 is a copy
    } else {
      outs.push_back(arg(results[i]));
    }
  }
  if (!outs.empty()) backend_->rotate_hoisted(*prepared_, outs, arg(a), elements, key_args);
  return results;
}

Ciphertext Engine::rotate_sum(std::span<const Ciphertext> a, std::span<const long> steps,
                              const GaloisKeys& keys) const {
  if (a.empty()) throw InvalidArgumentError("rotate_sum: no terms, expected at least one");
  if (steps.size() != a.size()) {
    throw InvalidArgumentError("rotate_sum: " + std::to_string(a.size()) + " terms and " +
                               std::to_string(steps.size()) + " steps, expected one step per term");
  }
  const long slots = static_cast<long>(context_->ring_degree() / 2);
  std::vector<PolyArg> rotated;
  std::vector<std::uint32_t> elements;
  std::vector<KeyArg> key_args;
  std::vector<const Ciphertext*> unrotated;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string what = "rotate_sum (term " + std::to_string(i) + ")";
    check_rotatable(what.c_str(), a[i]);
    check_addable(what.c_str(), a[0], a[i], 2);
    check_rotation_step("rotate_sum", steps[i], slots);
    if (steps[i] % slots == 0) {
      unrotated.push_back(&a[i]);
      continue;
    }
    const std::uint32_t element = context_->galois_element(steps[i]);
    key_args.push_back(arg(galois_key(keys, element, steps[i])));
    elements.push_back(element);
    rotated.push_back(arg(a[i]));
  }
  if (!rotated.empty() && !backend_->supports_rotate_sum()) {
    throw BackendError("rotate_sum: backend '" + backend_->name() +
                       "' has no rotate_sum (supports_rotate_sum() is false); rotate each term and add instead");
  }
  Ciphertext out = make_ciphertext(a[0].state);
  if (rotated.empty()) {
    backend_->drop_limbs(*prepared_, arg(out), arg(*unrotated[0]));
    unrotated.erase(unrotated.begin());
  } else {
    backend_->rotate_sum(*prepared_, arg(out), rotated, elements, key_args);
  }
  for (const Ciphertext* term : unrotated) backend_->add(*prepared_, arg(out), arg(out), arg(*term));
  return out;
}

// ---- domains ----

Ciphertext Engine::key_switch(const Ciphertext& a, const SwitchKey& key) const {
  check_rotatable("key_switch", a);
  if (!key.buffer) throw MissingKeyError("key_switch: no switching key was provided");
  if (key.context_id != context_->id()) {
    throw StateError("key_switch: the switching key belongs to context " + std::to_string(key.context_id) +
                     ", expected context " + std::to_string(context_->id()));
  }
  Ciphertext out = make_ciphertext(a.state);
  // X -> X^1 is the identity: the rotation's key switch alone.
  backend_->rotate(*prepared_, arg(out), arg(a), 1, arg(key));
  return out;
}

Ciphertext Engine::to_ntt(const Ciphertext& a) const {
  check_own(a, "to_ntt");
  if (a.state.domain != Domain::coefficient) {
    state_error("to_ntt", "operand is already in the ntt domain", a.state, "domain", "coefficient", "ntt");
  }
  ValueState s = a.state;
  s.domain = Domain::ntt;
  Ciphertext out = make_ciphertext(s);
  backend_->to_ntt(*prepared_, arg(out), arg(a));
  return out;
}

Ciphertext Engine::to_coefficient(const Ciphertext& a) const {
  check_own(a, "to_coefficient");
  require_ntt("to_coefficient", a.state);
  ValueState s = a.state;
  s.domain = Domain::coefficient;
  Ciphertext out = make_ciphertext(s);
  backend_->to_coefficient(*prepared_, arg(out), arg(a));
  return out;
}

Ciphertext Engine::multiply_relinearize_rescale(const Ciphertext& a, const Ciphertext& b, const RelinKey& key) const {
  constexpr const char* what = "multiply_relinearize_rescale";
  ValueState s = multiply_state(what, a, b);
  check_relin_key(key, what);
  if (s.level == 0) state_error(what, "operands are at level 0, expected level >= 1", s, "level", ">= 1", "0");
  s.components = 2;
  s.scale = s.scale / context_->rescale_divisor(s.level);  // as rescale(multiply_relinearize(a, b))
  s.level -= 1;
  Ciphertext out = make_ciphertext(s);
  backend_->multiply_relinearize_rescale(*prepared_, arg(out), arg(a), arg(b), arg(key));
  return out;
}

}  // namespace fhelium
