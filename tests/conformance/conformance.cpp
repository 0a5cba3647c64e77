#include "conformance.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <system_error>
#include <typeinfo>

#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/backend/residue_transfer.hpp"
#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"
#include "fhelium/params.hpp"
#include "helpers.hpp"

namespace fhelium::conformance {
namespace {

using Message = std::vector<std::complex<double>>;
using Outputs = std::vector<HostValue>;

constexpr double message_tolerance = 1e-4;  // at scale 2^40 or more; grows as the scale shrinks
constexpr double scale_bits = 40;

// ---- parameters of the shapes ----

// The default sets: Q primes 55 + levels x 40 bits, `specials` special
// primes of 55 bits (alpha = specials Q primes per key-switching digit). At
// the levels tested (top, middle, 0 or 1) the digits are: K1 always full; K2
// 2+2+1, 2+1 and 2; K3 3+3+1, 3+1 and 2 (partial last digits, one, two and
// three digits).
struct ParamSet {
  int levels;
  int specials;
};
constexpr ParamSet param_sets[] = {{3, 1}, {4, 2}, {6, 3}};

CkksParameters small_params(int log_n, int levels, int specials) {
  CkksParameters p;
  p.log_ring_degree = log_n;
  p.q_bits.push_back(55);
  p.q_bits.insert(p.q_bits.end(), static_cast<std::size_t>(levels), 40);
  p.p_bits.assign(static_cast<std::size_t>(specials), 55);
  p.scale = std::ldexp(1.0, static_cast<int>(scale_bits));
  p.allow_insecure = true;  // tiny insecure rings, for speed
  return p;
}

// Every prime of `bits` bits; the scale 2^40, or 2^(bits - 4) below 44 bits
// so that a message fits q_0.
CkksParameters with_prime_bits(CkksParameters p, int bits) {
  p.q_bits.assign(p.q_bits.size(), bits);
  p.p_bits.assign(p.p_bits.size(), bits);
  p.scale = std::ldexp(1.0, std::min(static_cast<int>(scale_bits), bits - 4));
  return p;
}

// "N4096/L3/K1", or "N4096/L3/K1/B44" with every prime of 44 bits.
std::string shape_name(int log_n, int levels, int specials, int bits) {
  return "N" + std::to_string(std::uint64_t{1} << log_n) + "/L" + std::to_string(levels) + "/K" +
         std::to_string(specials) + (bits > 0 ? "/B" + std::to_string(bits) : "");
}

// One parameter set to run: the name prefix of its cases, its parameters,
// what its keys and messages derive from (with the seed), and its levels.
struct Shape {
  std::string name;
  CkksParameters params;
  std::vector<std::uint64_t> seed_parts;
  std::vector<int> levels;  // highest first
};

void check_prime_bits(int bits, const std::string& what) {
  if (bits < 20 || bits > 61) {
    throw InvalidArgumentError(what + ": primes of " + std::to_string(bits) + " bits, expected 20..61");
  }
}

void check_log_n(int log_n, const std::string& what) {
  if (log_n < 10 || log_n > 17) {
    throw InvalidArgumentError(what + ": ring size 2^" + std::to_string(log_n) + ", expected 2^10..2^17");
  }
}

// Reads "N13_L6_K4" or "N13_L3_K2_B44" (at most three digits per number)
// into its numbers; false for anything else.
bool parse_shape(const std::string& name, int& log_n, int& levels, int& specials, int& bits) {
  std::size_t at = 0;
  const auto number = [&](const std::string& prefix, int& out) {
    if (name.compare(at, prefix.size(), prefix) != 0) return false;
    at += prefix.size();
    const std::size_t start = at;
    while (at < name.size() && at - start < 3 && std::isdigit(static_cast<unsigned char>(name[at])) != 0) ++at;
    if (at == start) return false;
    out = std::stoi(name.substr(start, at - start));
    return true;
  };
  bits = 0;
  if (!number("N", log_n) || !number("_L", levels) || !number("_K", specials)) return false;
  if (at < name.size() && !number("_B", bits)) return false;
  return at == name.size();
}

// Reads "N13_W32" (a small chain of the 32-bit word family) into log_n.
bool parse_int32_shape(const std::string& name, int& log_n) {
  const std::string suffix = "_W32";
  if (name.size() < 2 + suffix.size() || name.size() > 3 + suffix.size() || name[0] != 'N' || !name.ends_with(suffix)) {
    return false;
  }
  const std::string digits = name.substr(1, name.size() - 1 - suffix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  log_n = std::stoi(digits);
  return true;
}

// A set named in ConformanceOptions::params: "N13_L6_K4", "N13_L3_K2_B44",
// "N13_W32" or a preset.
Shape named_shape(const std::string& name) {
  Shape shape;
  int log_n = 0, levels = 0, specials = 0, bits = 0;
  if (parse_int32_shape(name, log_n)) {
    check_log_n(log_n, "parameter set '" + name + "'");
    shape.name = "N" + std::to_string(std::uint64_t{1} << log_n) + "/W32";
    shape.params = test::small_int32_params(log_n);  // the tests' small rational chain
    shape.seed_parts = {static_cast<std::uint64_t>(log_n), 32};
    return shape;
  }
  if (parse_shape(name, log_n, levels, specials, bits)) {
    const std::string what = "parameter set '" + name + "'";
    check_log_n(log_n, what);
    if (specials < 1) throw InvalidArgumentError(what + ": no special prime, expected K1 or more");
    if (bits != 0) check_prime_bits(bits, what);
    shape.name = shape_name(log_n, levels, specials, bits);
    shape.params = small_params(log_n, levels, specials);
    shape.seed_parts = {static_cast<std::uint64_t>(log_n), static_cast<std::uint64_t>(levels),
                        static_cast<std::uint64_t>(specials)};
    if (bits != 0) {
      shape.params = with_prime_bits(shape.params, bits);
      shape.seed_parts.push_back(static_cast<std::uint64_t>(bits));
    }
    return shape;
  }
  try {
    shape.params = preset(name);
  } catch (const ParameterError&) {
    std::string known;
    for (const auto& k : preset_names()) known += (known.empty() ? "" : ", ") + k;
    throw InvalidArgumentError("parameter set '" + name +
                               "' is neither a shape N<log2 N>_L<levels>_K<special primes>[_B<prime bits>] (e.g. "
                               "N13_L3_K2_B44), N<log2 N>_W32 (32-bit words) nor a preset (" +
                               known + ")");
  }
  shape.name = name;
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a of the name
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  shape.seed_parts = {hash};
  return shape;
}

// The levels of ConformanceOptions::levels in a set whose top level is `top`,
// highest first; by default top, middle and `lowest`.
std::vector<int> levels_of(const std::string& set, int top, const std::vector<int>& choices, int lowest) {
  std::vector<int> levels;
  if (choices.empty()) levels = {top, top / 2, std::min(top, lowest)};
  for (int choice : choices) {
    if (choice == top_level) {
      levels.push_back(top);
    } else if (choice == middle_level) {
      levels.push_back(top / 2);
    } else if (choice < 0 || choice > top) {
      throw InvalidArgumentError("level " + std::to_string(choice) + " of parameter set '" + set +
                                 "' is out of range: expected 0.." + std::to_string(top) + ", top or middle");
    } else {
      levels.push_back(choice);
    }
  }
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

// The parameter sets the options name (checked before anything runs).
std::vector<Shape> shapes_of(const ConformanceOptions& options) {
  std::vector<Shape> shapes;
  if (!options.operations) return shapes;
  if (!options.params.empty()) {
    for (const auto& name : options.params) {
      Shape shape = named_shape(name);
      shape.levels = levels_of(name, shape.params.max_level(), options.levels, 1);
      shapes.push_back(std::move(shape));
    }
    return shapes;
  }
  for (int log_n : options.log_n) {
    check_log_n(log_n, "log_n");
    for (std::size_t i = 0; i < std::size(param_sets); ++i) {
      const ParamSet& set = param_sets[i];
      Shape shape;
      shape.name = shape_name(log_n, set.levels, set.specials, 0);
      shape.params = small_params(log_n, set.levels, set.specials);
      shape.seed_parts = {static_cast<std::uint64_t>(log_n), static_cast<std::uint64_t>(set.levels),
                          static_cast<std::uint64_t>(set.specials)};
      // Level 0 in the first set; 1 in the others, so that rescale runs at 1 -> 0.
      shape.levels = levels_of(shape.name, set.levels, options.levels, i == 0 ? 0 : 1);
      shapes.push_back(std::move(shape));
    }
  }
  return shapes;
}

// Exact rotation keys: the composed rotation 7 = 1 + 2 + 4 has no key of its own.
const std::vector<long> key_steps = {1, 2, 4, 5, -3};
const std::vector<long> rotation_steps = {1, 5, -3};
const std::vector<long> hoisted_steps = {1, 5, -3, 0, 2};

// ---- seeds ----

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t mix(std::uint64_t seed, const std::vector<std::uint64_t>& parts) {
  std::uint64_t state = seed;
  std::uint64_t out = splitmix64(state);
  for (auto p : parts) {
    state ^= p * 0xff51afd7ed558ccdULL;
    out = splitmix64(state);
  }
  return out;
}

Seed make_seed(std::uint64_t value) {
  Seed seed{};
  std::uint64_t state = value;
  for (std::size_t i = 0; i < seed.size(); i += 8) {
    const std::uint64_t word = splitmix64(state);
    std::memcpy(seed.data() + i, &word, 8);
  }
  return seed;
}

// ---- clear-message helpers ----

Message random_message(std::mt19937_64& rng, std::size_t slots) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  Message m(slots);
  for (auto& x : m) x = {d(rng), d(rng)};
  return m;
}

template <class Op>
Message zip(const Message& x, const Message& y, Op op) {
  Message out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = op(x[i], y[i]);
  return out;
}

template <class Op>
Message map(const Message& x, Op op) {
  Message out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = op(x[i]);
  return out;
}

std::string exception_text(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string type = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return std::string(e.what()) + " [" + type + "]";
}

Outputs single(HostValue v) {
  Outputs o;
  o.push_back(std::move(v));
  return o;
}

// ---- poisoned allocation ----

constexpr u64 poison = ~u64{0};

// The backend under test, with every buffer it allocates filled with 0xFF
// bytes first, so that a residue an operation leaves unwritten is never
// 0..q-1 (fresh or recycled memory may hold the right values by chance: the
// host copy of the reference's result that was just freed, for example).
// Everything else is forwarded unchanged; the buffers are the backend's own.
class PoisoningBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    auto buffer = inner().allocate(bytes);
    if (poison_.size() * sizeof(u64) < bytes) poison_.resize((bytes + sizeof(u64) - 1) / sizeof(u64), poison);
    if (bytes > 0) inner().upload(*buffer, poison_.data(), bytes);
    return buffer;
  }
  // The backend's own versions (ForwardingBackend's defaults would run its
  // multiply and relinearize, its multiply_relinearize and rescale, its
  // multiply_plain and add, its multiply_constant and sum_products, its
  // sum_products).
  void multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                            const KeyArg& key) override {
    inner().multiply_relinearize(c, out, a, b, key);
  }
  void multiply_relinearize_rescale(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                                    const KeyArg& key) override {
    inner().multiply_relinearize_rescale(c, out, a, b, key);
  }
  void sum_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                    std::span<const PolyArg> p) override {
    inner().sum_products(c, out, a, p);
  }
  void sum_constant_products(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override {
    inner().sum_constant_products(c, out, a, r);
  }
  void rotate_sum(const BackendContext& c, const PolyArg& out, std::span<const PolyArg> a,
                  std::span<const std::uint32_t> galois_elements, std::span<const KeyArg> keys) override {
    inner().rotate_sum(c, out, a, galois_elements, keys);
  }
  void sum_product_groups(const BackendContext& c, std::span<const PolyArg> outs, std::span<const PolyArg> a,
                          std::span<const PolyArg> p, std::span<const std::size_t> ends) override {
    inner().sum_product_groups(c, outs, a, p, ends);
  }

 private:
  std::vector<u64> poison_;
};

// ---- the two sides ----

// One engine with its keys and its own prepared tables for the direct calls.
struct Side {
  Side(std::shared_ptr<const Context> context, std::shared_ptr<Backend> backend, const HostSwitchKey& relin,
       const std::vector<HostSwitchKey>& galois)
      : engine(context, backend),
        prepared(backend->prepare(context)),
        rk(engine.upload_relinearization_key(relin)),
        gk(engine.upload_galois_keys(galois)) {}

  Engine engine;
  std::shared_ptr<BackendContext> prepared;
  RelinKey rk;
  GaloisKeys gk;

  Backend& backend() const { return engine.backend(); }
  const Context& context() const { return engine.context(); }
  Ciphertext ct(const HostValue& v) const { return engine.upload_ciphertext(v); }
  Plaintext pt(const HostValue& v) const { return engine.upload_plaintext(v); }
  HostValue get(const Value& v) const { return engine.download(v); }
};

// One context: keys from a seeded CSPRNG, generated on the host once and
// uploaded to both sides.
struct ShapeSetup {
  ShapeSetup(const CkksParameters& params, std::uint64_t seed)
      : context(Context::create(params)),
        rng(make_seed(seed)),
        keygen(context, rng),
        sk(keygen.secret_key()),
        pk(keygen.public_key(sk)),
        encoder(context),
        decryptor(context),
        relin(keygen.relinearization_key(sk)) {
    for (long s : key_steps) galois.push_back(keygen.galois_key(sk, context->galois_element(s)));
    galois.push_back(keygen.galois_key(sk, context->conjugation_element()));
  }

  std::shared_ptr<const Context> context;
  Csprng rng;
  KeyGenerator keygen;
  SecretKey sk;
  PublicKey pk;
  Encoder encoder;
  Decryptor decryptor;
  HostSwitchKey relin;
  std::vector<HostSwitchKey> galois;
  std::unique_ptr<Side> reference;
  std::unique_ptr<Side> test;
};

// Fresh messages and their encryptions at one level (encrypted on the host
// once; every case uploads the same host values to both sides), and the
// reference's intermediate results that later operations take as inputs, so
// that every case exercises exactly one operation.
struct Trial {
  int level = 0;
  Message a, b, c;
  HostValue ha, hb, hc;        // ciphertexts of a, b, c
  HostValue pa, pb, pc;        // plaintexts of a, b, c
  HostValue product;           // a x b, 3 components (reference)
  HostValue relinearized;      // a x b, 2 components (reference)
  HostValue coeff_a, coeff_b;  // coefficient-domain a, b (reference)
  std::vector<u64> constants;  // one random residue per limb
};

Trial make_trial(ShapeSetup& s, int level, std::uint64_t seed) {
  Trial t;
  t.level = level;
  std::mt19937_64 mrng(seed);
  const std::size_t slots = s.context->ring_degree() / 2;
  t.a = random_message(mrng, slots);
  t.b = random_message(mrng, slots);
  t.c = random_message(mrng, slots);
  const double scale = s.context->params().scale;
  // Encryption randomness of its own, so a case gives the same ciphertexts
  // whether it runs alone (--filter) or with the others.
  Csprng rng(make_seed(mrng()));
  Encryptor encryptor(s.context, rng);
  t.ha = encryptor.encrypt(s.encoder.encode(t.a, level, scale), s.pk);
  t.hb = encryptor.encrypt(s.encoder.encode(t.b, level, scale), s.pk);
  t.hc = encryptor.encrypt(s.encoder.encode(t.c, level, scale), s.pk);
  t.pa = s.encoder.encode(t.a, level, scale);
  t.pb = s.encoder.encode(t.b, level, scale);
  t.pc = s.encoder.encode(t.c, level, scale);
  const Side& r = *s.reference;
  const auto ra = r.ct(t.ha);
  const auto rb = r.ct(t.hb);
  const auto product = r.engine.multiply(ra, rb);
  t.product = r.get(product);
  t.relinearized = r.get(r.engine.relinearize(product, r.rk));
  t.coeff_a = r.get(r.engine.to_coefficient(ra));
  t.coeff_b = r.get(r.engine.to_coefficient(rb));
  for (int i = 0; i < s.context->level_basis(level).count; ++i) {
    t.constants.push_back(mrng() % s.context->level_modulus(level, i).value);
  }
  return t;
}

// ---- comparisons ----

std::string compare_residues(const Context& ctx, const HostValue& test, const HostValue& ref) {
  if (test.data.size() != ref.data.size()) {
    return "backend returned " + std::to_string(test.data.size()) + " words, reference " +
           std::to_string(ref.data.size());
  }
  std::size_t first = ref.data.size();
  std::size_t count = 0;
  for (std::size_t i = 0; i < ref.data.size(); ++i) {
    if (test.data[i] != ref.data[i]) {
      if (count == 0) first = i;
      ++count;
    }
  }
  if (count == 0) return {};
  const std::size_t n = ctx.ring_degree();
  const auto limbs = static_cast<std::size_t>(std::max(1, ref.state.limbs(ctx)));
  std::ostringstream s;
  s << count << " of " << ref.data.size() << " residues differ; first at component " << first / (limbs * n) << ", limb "
    << (first / n) % limbs << ", coefficient " << first % n << ": backend " << test.data[first] << ", reference "
    << ref.data[first];
  if (test.data[first] == ~u64{0}) s << " (the 0xFF poison: never written)";
  return s.str();
}

// log2 of the product of the level's primes.
double log_q(const Context& ctx, int level) {
  double bits = 0;
  for (int i = 0; i < ctx.level_basis(level).count; ++i) {
    bits += std::log2(static_cast<double>(ctx.level_modulus(level, i).value));
  }
  return bits;
}

// Decrypts (ciphertexts) or decodes (plaintexts) the backend's result and
// compares it with the clear message. Values whose scaled message does not
// fit Q_level (a product at level 0) are not checked. Returns an error or "".
std::string check_message(const ShapeSetup& s, const HostValue& value, const Message& expected, double& max_err,
                          bool& checked) {
  double amplitude = 0;
  for (const auto& x : expected) amplitude = std::max(amplitude, std::abs(x));
  checked =
      std::log2(value.state.scale) + std::log2(std::max(amplitude, 1.0)) + 2.0 < log_q(*s.context, value.state.level);
  if (!checked) return {};
  const HostValue plain = value.state.components == 1 ? value : s.decryptor.decrypt(value, s.sk);
  const Message actual = s.encoder.decode(plain, expected.size());
  double err = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = std::abs(expected[i] - actual[i]);
    if (!(e <= err)) err = e;  // NaN propagates
  }
  max_err = std::max(max_err, err);
  // The error is inversely proportional to the scale: a product rescaled by
  // a 44-bit prime is at 2^36.
  const double tolerance =
      message_tolerance * std::max(1.0, std::ldexp(1.0, static_cast<int>(scale_bits)) / value.state.scale);
  if (!(err < tolerance)) {
    std::ostringstream o;
    o << "decrypted message differs from the expected one: max error " << err << " (tolerance " << tolerance << ")";
    return o.str();
  }
  return {};
}

// ---- direct Backend calls on poisoned buffers ----

// Uploads inputs, allocates outputs filled with 0xFF plus one guard limb past
// the end, and after the call checks the guard and that the inputs are unchanged.
class DirectCall {
 public:
  DirectCall(Backend& backend, const BackendContext& prepared, const Context& context)
      : backend_(backend), prepared_(prepared), context_(context), n_(context.ring_degree()) {}
  explicit DirectCall(Side& side) : DirectCall(side.backend(), *side.prepared, side.context()) {}

  PolyArg input(const HostValue& v) {
    auto buffer = backend_.allocate(v.data.size() * word_bytes());
    upload_residues(backend_, *buffer, v.data, context_.word_size());
    inputs_.push_back({buffer, &v});
    return {buffer.get(), v.state.components, v.state.limbs(context_)};
  }

  PolyArg output(const ValueState& state) {
    const std::size_t words = state.words(context_);
    const std::vector<u64> poisoned(words + n_, stored_poison());
    auto buffer = backend_.allocate(poisoned.size() * word_bytes());
    upload_residues(backend_, *buffer, poisoned, context_.word_size());
    outputs_.push_back({buffer, state});
    return {buffer.get(), state.components, state.limbs(context_)};
  }

  // An input that is also the output (out aliases it), with a guard limb.
  PolyArg in_out(const HostValue& v) {
    std::vector<u64> words(v.data.size() + n_, stored_poison());
    std::copy(v.data.begin(), v.data.end(), words.begin());
    auto buffer = backend_.allocate(words.size() * word_bytes());
    upload_residues(backend_, *buffer, words, context_.word_size());
    outputs_.push_back({buffer, v.state});
    return {buffer.get(), v.state.components, v.state.limbs(context_)};
  }

  static KeyArg key(const SwitchKey& k) { return {k.buffer.get(), k.digits}; }
  // The poison as a stored word holds it (all ones in 4 or 8 bytes).
  u64 stored_poison() const { return word_bytes() == sizeof(u64) ? poison : u64{~u32{0}}; }
  std::size_t word_bytes() const { return stored_word_bytes(context_.word_size()); }
  const BackendContext& prepared() const { return prepared_; }
  Backend& backend() const { return backend_; }

  // Downloads the outputs; reports overruns and modified inputs in `problems`.
  Outputs finish(std::string& problems) {
    backend_.synchronize();
    Outputs outs;
    for (std::size_t o = 0; o < outputs_.size(); ++o) {
      const auto& [buffer, state] = outputs_[o];
      const std::size_t words = state.words(context_);
      std::vector<u64> all(words + n_);
      download_residues(backend_, *buffer, all, context_.word_size());
      const auto guard = std::find_if(all.begin() + static_cast<std::ptrdiff_t>(words), all.end(),
                                      [this](u64 w) { return w != stored_poison(); });
      if (guard != all.end()) {
        problems += "output " + std::to_string(o) + ": wrote past the end (guard word " +
                    std::to_string(guard - all.begin() - static_cast<std::ptrdiff_t>(words)) + " changed); ";
      }
      HostValue h;
      h.state = state;
      h.data.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(words));
      outs.push_back(std::move(h));
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const auto& [buffer, original] = inputs_[i];
      std::vector<u64> now(original->data.size());
      download_residues(backend_, *buffer, now, context_.word_size());
      if (now != original->data) problems += "input " + std::to_string(i) + " was modified; ";
    }
    return outs;
  }

 private:
  Backend& backend_;
  const BackendContext& prepared_;
  const Context& context_;
  std::size_t n_;
  std::vector<std::pair<std::shared_ptr<Buffer>, const HostValue*>> inputs_;
  std::vector<std::pair<std::shared_ptr<Buffer>, ValueState>> outputs_;
};

// ---- cases ----

struct CaseDef {
  std::string name;  // operation, without the shape prefix
  // Runs the operation on one side and returns the downloaded results;
  // direct calls append overruns and modified inputs to `problems`.
  std::function<Outputs(Side&, const Trial&, std::string& problems)> run;
  // The clear message of each result (empty: residues only).
  std::function<std::vector<Message>(const Trial&)> expected;
  // Runs only against a backend with rotate_sum (it has no fallback).
  bool needs_rotate_sum = false;
};

std::string steps_text(const std::vector<long>& steps) {
  std::string s;
  for (long x : steps) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<CaseDef> make_cases(int level) {
  std::vector<CaseDef> cases;
  const auto def = [&](std::string name, auto run, auto expected) {
    cases.push_back({std::move(name), run, expected});
  };
  const auto one = [](Message m) { return std::vector<Message>{std::move(m)}; };
  const auto plus = [](auto x, auto y) { return x + y; };
  const auto minus = [](auto x, auto y) { return x - y; };
  const auto times = [](auto x, auto y) { return x * y; };
  using P = std::string&;
  using T = const Trial&;

  // Addition family.
  def(
      "add", [](Side& s, T t, P) { return single(s.get(s.engine.add(s.ct(t.ha), s.ct(t.hb)))); },
      [=](T t) { return one(zip(t.a, t.b, plus)); });
  def(
      "sub", [](Side& s, T t, P) { return single(s.get(s.engine.sub(s.ct(t.ha), s.ct(t.hb)))); },
      [=](T t) { return one(zip(t.a, t.b, minus)); });
  def(
      "negate", [](Side& s, T t, P) { return single(s.get(s.engine.negate(s.ct(t.ha)))); },
      [=](T t) { return one(map(t.a, [](auto x) { return -x; })); });
  def(
      "add_plain", [](Side& s, T t, P) { return single(s.get(s.engine.add(s.ct(t.ha), s.pt(t.pb)))); },
      [=](T t) { return one(zip(t.a, t.b, plus)); });
  def(
      "sub_plain", [](Side& s, T t, P) { return single(s.get(s.engine.sub(s.ct(t.ha), s.pt(t.pb)))); },
      [=](T t) { return one(zip(t.a, t.b, minus)); });
  def(
      "add_inplace",
      [](Side& s, T t, P) {
        auto x = s.ct(t.ha);
        s.engine.add_inplace(x, s.ct(t.hb));
        return single(s.get(x));
      },
      [=](T t) { return one(zip(t.a, t.b, plus)); });
  def(
      "sub_inplace",
      [](Side& s, T t, P) {
        auto x = s.ct(t.ha);
        s.engine.sub_inplace(x, s.ct(t.hb));
        return single(s.get(x));
      },
      [=](T t) { return one(zip(t.a, t.b, minus)); });
  def(
      "add(coefficient)", [](Side& s, T t, P) { return single(s.get(s.engine.add(s.ct(t.coeff_a), s.ct(t.coeff_b)))); },
      [=](T t) { return one(zip(t.a, t.b, plus)); });
  def(
      "add_scalar(0.75,ntt)", [](Side& s, T t, P) { return single(s.get(s.engine.add_scalar(s.ct(t.ha), 0.75))); },
      [=](T t) { return one(map(t.a, [](auto x) { return x + 0.75; })); });
  def(
      "sub_scalar(0.25,ntt)", [](Side& s, T t, P) { return single(s.get(s.engine.sub_scalar(s.ct(t.ha), 0.25))); },
      [=](T t) { return one(map(t.a, [](auto x) { return x - 0.25; })); });
  def(
      "add_scalar(2,coefficient)",
      [](Side& s, T t, P) { return single(s.get(s.engine.add_scalar(s.ct(t.coeff_a), 2.0))); },
      [=](T t) { return one(map(t.a, [](auto x) { return x + 2.0; })); });
  def(
      "sum(3)",
      [](Side& s, T t, P) {
        const std::vector<Ciphertext> batch = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hc)};
        return single(s.get(s.engine.sum(batch)));
      },
      [=](T t) { return one(zip(zip(t.a, t.b, plus), t.c, plus)); });
  def(
      "sum(1)",
      [](Side& s, T t, P) {
        const std::vector<Ciphertext> batch = {s.ct(t.ha)};
        return single(s.get(s.engine.sum(batch)));
      },
      [=](T t) { return one(t.a); });

  // 20 terms: more than one launch of a backend that fuses 15 or 16. Term
  // i is x_(i mod 3) y_((i + i / 3) mod 3), so every pairing occurs and a
  // plaintext read for the wrong term changes the sum.
  const auto term_pair = [](int i) { return std::pair{i % 3, (i + i / 3) % 3}; };
  // Three uploads each, the terms sharing their buffers (inputs may repeat).
  const auto twenty = [=](Side& s, T t) {
    const Ciphertext ciphertexts[] = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hc)};
    std::vector<Ciphertext> batch;
    for (int i = 0; i < 20; ++i) batch.push_back(ciphertexts[term_pair(i).first]);
    return batch;
  };
  const auto twenty_plains = [=](Side& s, T t) {
    const Plaintext plaintexts[] = {s.pt(t.pa), s.pt(t.pb), s.pt(t.pc)};
    std::vector<Plaintext> plains;
    for (int i = 0; i < 20; ++i) plains.push_back(plaintexts[term_pair(i).second]);
    return plains;
  };
  const auto twenty_clear = [=](T t, bool products) {
    const Message* messages[] = {&t.a, &t.b, &t.c};
    Message total(t.a.size());
    for (int i = 0; i < 20; ++i) {
      const auto [x, y] = term_pair(i);
      total = products ? zip(total, zip(*messages[x], *messages[y], times), plus) : zip(total, *messages[x], plus);
    }
    return total;
  };
  def(
      "sum(20)", [=](Side& s, T t, P) { return single(s.get(s.engine.sum(twenty(s, t)))); },
      [=](T t) { return one(twenty_clear(t, false)); });

  // Multiplication family.
  def(
      "multiply_plain_sum(3)",
      [](Side& s, T t, P) {
        const std::vector<Ciphertext> batch = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hc)};
        const std::vector<Plaintext> plains = {s.pt(t.pc), s.pt(t.pa), s.pt(t.pb)};
        return single(s.get(s.engine.multiply_plain_sum(batch, plains)));
      },
      [=](T t) { return one(zip(zip(zip(t.a, t.c, times), zip(t.b, t.a, times), plus), zip(t.c, t.b, times), plus)); });
  def(
      "multiply_plain_sum(20)",
      [=](Side& s, T t, P) { return single(s.get(s.engine.multiply_plain_sum(twenty(s, t), twenty_plains(s, t)))); },
      [=](T t) { return one(twenty_clear(t, true)); });
  // multiply_plain_sums over groups held in vectors, every result downloaded.
  const auto plain_sums = [](Side& s, const std::vector<std::vector<Ciphertext>>& a,
                             const std::vector<std::vector<Plaintext>>& p) {
    const std::vector<std::span<const Ciphertext>> as(a.begin(), a.end());
    const std::vector<std::span<const Plaintext>> ps(p.begin(), p.end());
    Outputs outs;
    for (const Ciphertext& r : s.engine.multiply_plain_sums(as, ps)) outs.push_back(s.get(r));
    return outs;
  };
  // Three groups over the same three ciphertexts (a linear transform's giant
  // groups share their baby rotations), one of a single term.
  def(
      "multiply_plain_sums(3 groups)",
      [=](Side& s, T t, P) {
        const std::vector<Ciphertext> x = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hc)};
        const std::vector<Plaintext> p = {s.pt(t.pa), s.pt(t.pb), s.pt(t.pc)};
        return plain_sums(s, {{x[0], x[1], x[2]}, {x[1], x[2]}, {x[0]}}, {{p[2], p[0], p[1]}, {p[1], p[2]}, {p[0]}});
      },
      [=](T t) {
        return std::vector<Message>{
            zip(zip(zip(t.a, t.c, times), zip(t.b, t.a, times), plus), zip(t.c, t.b, times), plus),
            zip(zip(t.b, t.b, times), zip(t.c, t.c, times), plus), zip(t.a, t.a, times)};
      });
  // 18 groups over 20 ciphertexts of their own: more groups (16) and more
  // ciphertexts (15) than one launch of a backend that fuses them takes.
  // Group g has input i unless (i + g) mod 4 = 0, times plaintext (i + g) mod
  // 3; group 17 only inputs 16-19, none in such a launch's first ciphertexts.
  const auto in_group = [](int g, int i) { return g == 17 ? i >= 16 : (i + g) % 4 != 0; };
  def(
      "multiply_plain_sums(18 groups, 20 inputs)",
      [=](Side& s, T t, P) {
        const HostValue* handles[] = {&t.ha, &t.hb, &t.hc};
        const Plaintext plains[] = {s.pt(t.pa), s.pt(t.pb), s.pt(t.pc)};
        std::vector<Ciphertext> x;
        for (int i = 0; i < 20; ++i) x.push_back(s.ct(*handles[i % 3]));
        std::vector<std::vector<Ciphertext>> a(18);
        std::vector<std::vector<Plaintext>> p(18);
        for (int g = 0; g < 18; ++g) {
          for (int i = 0; i < 20; ++i) {
            if (!in_group(g, i)) continue;
            a[g].push_back(x[i]);
            p[g].push_back(plains[(i + g) % 3]);
          }
        }
        return plain_sums(s, a, p);
      },
      [=](T t) {
        const Message* m[] = {&t.a, &t.b, &t.c};
        std::vector<Message> sums;
        for (int g = 0; g < 18; ++g) {
          Message total(t.a.size());
          for (int i = 0; i < 20; ++i) {
            if (in_group(g, i)) total = zip(total, zip(*m[i % 3], *m[(i + g) % 3], times), plus);
          }
          sums.push_back(total);
        }
        return sums;
      });
  // Forms a fusing backend may leave to the default: one ciphertext twice in
  // a group, and three-component products.
  def(
      "multiply_plain_sums(a ciphertext twice)",
      [=](Side& s, T t, P) {
        const Ciphertext x = s.ct(t.ha), y = s.ct(t.hb);
        return plain_sums(s, {{x, x, y}, {y}}, {{s.pt(t.pa), s.pt(t.pb), s.pt(t.pc)}, {s.pt(t.pb)}});
      },
      [=](T t) {
        return std::vector<Message>{
            zip(zip(zip(t.a, t.a, times), zip(t.a, t.b, times), plus), zip(t.b, t.c, times), plus),
            zip(t.b, t.b, times)};
      });
  def(
      "multiply_plain_sums(3 components)",
      [=](Side& s, T t, P) {
        const Ciphertext m = s.ct(t.product);
        return plain_sums(s, {{m}, {m}}, {{s.pt(t.pc)}, {s.pt(t.pa)}});
      },
      [=](T t) {
        const Message ab = zip(t.a, t.b, times);
        return std::vector<Message>{zip(ab, t.c, times), zip(ab, t.a, times)};
      });
  def(
      "multiply_scalar_sum(3)",
      [](Side& s, T t, P) {
        const std::vector<Ciphertext> batch = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hc)};
        const double scale = s.context().params().scale;
        const std::vector<double> values = {-1.5, 0.25, 2.0}, scales = {scale, scale, scale};
        return single(s.get(s.engine.multiply_scalar_sum(batch, values, scales)));
      },
      [=](T t) {
        const auto scaled = [](const Message& m, double v) { return map(m, [v](auto x) { return v * x; }); };
        return one(zip(zip(scaled(t.a, -1.5), scaled(t.b, 0.25), plus), scaled(t.c, 2.0), plus));
      });
  // 20 terms, more than one launch of 12; value i is (i - 10) / 8.
  def(
      "multiply_scalar_sum(20)",
      [=](Side& s, T t, P) {
        std::vector<double> values, scales(20, s.context().params().scale);
        for (int i = 0; i < 20; ++i) values.push_back((i - 10) / 8.0);
        return single(s.get(s.engine.multiply_scalar_sum(twenty(s, t), values, scales)));
      },
      [=](T t) {
        const Message* messages[] = {&t.a, &t.b, &t.c};
        Message total(t.a.size());
        for (int i = 0; i < 20; ++i) {
          const double v = (i - 10) / 8.0;
          total = zip(total, map(*messages[term_pair(i).first], [v](auto x) { return v * x; }), plus);
        }
        return one(total);
      });
  def(
      "multiply_integer(-3)", [](Side& s, T t, P) { return single(s.get(s.engine.multiply_integer(s.ct(t.ha), -3))); },
      [=](T t) { return one(map(t.a, [](auto x) { return -3.0 * x; })); });
  def(
      "multiply_scalar(-1.5)",
      [](Side& s, T t, P) {
        return single(s.get(s.engine.multiply_scalar(s.ct(t.ha), -1.5, s.context().params().scale)));
      },
      [=](T t) { return one(map(t.a, [](auto x) { return -1.5 * x; })); });
  def(
      "multiply_plain", [](Side& s, T t, P) { return single(s.get(s.engine.multiply_plain(s.ct(t.ha), s.pt(t.pb)))); },
      [=](T t) { return one(zip(t.a, t.b, times)); });
  def(
      "multiply", [](Side& s, T t, P) { return single(s.get(s.engine.multiply(s.ct(t.ha), s.ct(t.hb)))); },
      [=](T t) { return one(zip(t.a, t.b, times)); });
  def(
      "add(3 components)",
      [](Side& s, T t, P) { return single(s.get(s.engine.add(s.ct(t.product), s.ct(t.product)))); },
      [=](T t) { return one(map(zip(t.a, t.b, times), [](auto x) { return 2.0 * x; })); });
  def(
      "relinearize", [](Side& s, T t, P) { return single(s.get(s.engine.relinearize(s.ct(t.product), s.rk))); },
      [=](T t) { return one(zip(t.a, t.b, times)); });
  def(
      "multiply_relinearize",
      [](Side& s, T t, P) { return single(s.get(s.engine.multiply_relinearize(s.ct(t.ha), s.ct(t.hb), s.rk))); },
      [=](T t) { return one(zip(t.a, t.b, times)); });
  if (level >= 1) {
    def(
        "rescale", [](Side& s, T t, P) { return single(s.get(s.engine.rescale(s.ct(t.relinearized)))); },
        [=](T t) { return one(zip(t.a, t.b, times)); });
    def(
        "rescale(3 components)", [](Side& s, T t, P) { return single(s.get(s.engine.rescale(s.ct(t.product)))); },
        [=](T t) { return one(zip(t.a, t.b, times)); });
    def(
        "multiply_relinearize_rescale",
        [](Side& s, T t, P) {
          return single(s.get(s.engine.multiply_relinearize_rescale(s.ct(t.ha), s.ct(t.hb), s.rk)));
        },
        [=](T t) { return one(zip(t.a, t.b, times)); });
    def(
        "drop_to_level(0)", [](Side& s, T t, P) { return single(s.get(s.engine.drop_to_level(s.ct(t.ha), 0))); },
        [=](T t) { return one(t.a); });
  }
  // ModRaise (level 0 of one prime, or two in the 32-bit family): residues
  // against cpu; back at level 0 it is the input again.
  if (level >= 1) {
    def(
        "mod_raise",
        [](Side& s, T t, P) { return single(s.get(s.engine.mod_raise(s.engine.drop_to_level(s.ct(t.ha), 0)))); },
        [](T) { return std::vector<Message>{}; });
    def(
        "mod_raise,drop_to_level(0)",
        [](Side& s, T t, P) {
          return single(s.get(s.engine.drop_to_level(s.engine.mod_raise(s.engine.drop_to_level(s.ct(t.ha), 0)), 0)));
        },
        [=](T t) { return one(t.a); });
  }
  if (level >= 1) {
    def(
        "drop_to_level(0,plaintext)",
        [](Side& s, T t, P) { return single(s.get(s.engine.drop_to_level(s.pt(t.pb), 0))); },
        [=](T t) { return one(t.b); });
  }
  if (level >= 2) {
    const int target = level - 1;
    def(
        "drop_to_level(" + std::to_string(target) + ")",
        [target](Side& s, T t, P) { return single(s.get(s.engine.drop_to_level(s.ct(t.ha), target))); },
        [=](T t) { return one(t.a); });
  }

  // Rotations.
  for (long step : rotation_steps) {
    def(
        "rotate(" + std::to_string(step) + ")",
        [step](Side& s, T t, P) { return single(s.get(s.engine.rotate(s.ct(t.ha), step, s.gk))); },
        [=](T t) { return one(rotate_slots(t.a, step)); });
  }
  def(
      "rotate(7,composed)", [](Side& s, T t, P) { return single(s.get(s.engine.rotate(s.ct(t.ha), 7, s.gk))); },
      [=](T t) { return one(rotate_slots(t.a, 7)); });
  def(
      "rotate(0)", [](Side& s, T t, P) { return single(s.get(s.engine.rotate(s.ct(t.ha), 0, s.gk))); },
      [=](T t) { return one(t.a); });
  def(
      "conjugate", [](Side& s, T t, P) { return single(s.get(s.engine.conjugate(s.ct(t.ha), s.gk))); },
      [=](T t) { return one(map(t.a, [](auto x) { return std::conj(x); })); });
  def(
      "rotate_hoisted(" + steps_text(hoisted_steps) + ")",
      [](Side& s, T t, P) {
        Outputs outs;
        for (const auto& r : s.engine.rotate_hoisted(s.ct(t.ha), hoisted_steps, s.gk)) outs.push_back(s.get(r));
        return outs;
      },
      [=](T t) {
        std::vector<Message> m;
        for (long step : hoisted_steps) m.push_back(rotate_slots(t.a, step));
        return m;
      });

  def(
      "rotate_sum(1,-3,0)",
      [](Side& s, T t, P) {
        const std::vector<Ciphertext> terms = {s.ct(t.ha), s.ct(t.hb), s.ct(t.hb)};
        const std::vector<long> steps = {1, -3, 0};
        return single(s.get(s.engine.rotate_sum(terms, steps, s.gk)));
      },
      [=](T t) { return one(zip(zip(rotate_slots(t.a, 1), rotate_slots(t.b, -3), plus), t.b, plus)); });
  cases.back().needs_rotate_sum = true;

  // Domains.
  def(
      "to_coefficient", [](Side& s, T t, P) { return single(s.get(s.engine.to_coefficient(s.ct(t.ha)))); },
      [=](T t) { return one(t.a); });
  def(
      "to_ntt", [](Side& s, T t, P) { return single(s.get(s.engine.to_ntt(s.ct(t.coeff_a)))); },
      [=](T t) { return one(t.a); });

  // Backend operations called directly on poisoned output buffers.
  const auto none = [](T) { return std::vector<Message>{}; };
  const auto with_state = [](const HostValue& v, int components, int level_out, Domain domain) {
    ValueState st = v.state;
    st.components = components;
    st.level = level_out;
    st.domain = domain;
    return st;
  };
  const auto direct = [&](const std::string& name, auto body) {
    def(
        "direct:" + name,
        [body](Side& s, T t, P problems) {
          DirectCall call(s);
          body(call, s, t);
          return call.finish(problems);
        },
        none);
  };
  direct("add", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), b = d.input(t.hb);
    d.backend().add(d.prepared(), d.output(t.ha.state), a, b);
  });
  direct("add(plain)", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), b = d.input(t.pb);
    d.backend().add(d.prepared(), d.output(t.ha.state), a, b);
  });
  direct("sub", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), b = d.input(t.hb);
    d.backend().sub(d.prepared(), d.output(t.ha.state), a, b);
  });
  direct("sub(plain)", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), b = d.input(t.pb);
    d.backend().sub(d.prepared(), d.output(t.ha.state), a, b);
  });
  direct("add(out aliases a)", [](DirectCall& d, Side&, T t) {
    const auto b = d.input(t.hb), a = d.in_out(t.ha);
    d.backend().add(d.prepared(), a, a, b);
  });
  direct("negate", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha);
    d.backend().negate(d.prepared(), d.output(t.ha.state), a);
  });
  direct("add_constant(ntt)", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha);
    d.backend().add_constant(d.prepared(), d.output(t.ha.state), a, t.constants, true);
  });
  direct("add_constant(coefficient)", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.coeff_a);
    d.backend().add_constant(d.prepared(), d.output(t.coeff_a.state), a, t.constants, false);
  });
  direct("multiply_constant", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha);
    d.backend().multiply_constant(d.prepared(), d.output(t.ha.state), a, t.constants);
  });
  direct("multiply_plain", [](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), p = d.input(t.pb);
    d.backend().multiply_plain(d.prepared(), d.output(t.ha.state), a, p);
  });
  direct("sum_products", [](DirectCall& d, Side&, T t) {
    const std::vector<PolyArg> terms = {d.input(t.ha), d.input(t.hb), d.input(t.hc)};
    const std::vector<PolyArg> plains = {d.input(t.pc), d.input(t.pa), d.input(t.pb)};
    d.backend().sum_products(d.prepared(), d.output(t.ha.state), terms, plains);
  });
  direct("sum_products(no plaintexts)", [](DirectCall& d, Side&, T t) {
    const std::vector<PolyArg> terms = {d.input(t.ha), d.input(t.hb), d.input(t.hc)};
    d.backend().sum_products(d.prepared(), d.output(t.ha.state), terms, {});
  });
  // Two groups sharing two of their ciphertexts.
  direct("sum_product_groups", [](DirectCall& d, Side&, T t) {
    const PolyArg a = d.input(t.ha), b = d.input(t.hb), c = d.input(t.hc);
    const PolyArg pa = d.input(t.pa), pb = d.input(t.pb), pc = d.input(t.pc);
    const std::vector<PolyArg> terms = {a, b, c, b, a}, plains = {pc, pa, pb, pb, pc};
    const std::vector<PolyArg> outs = {d.output(t.ha.state), d.output(t.ha.state)};
    const std::vector<std::size_t> ends = {3, 5};
    d.backend().sum_product_groups(d.prepared(), outs, terms, plains, ends);
  });
  // 20 terms (more than one launch of 12), each with its own constants:
  // the drawn ones, 1, or the term's index.
  direct("sum_constant_products", [](DirectCall& d, Side&, T t) {
    const PolyArg inputs[] = {d.input(t.ha), d.input(t.hb), d.input(t.hc)};
    std::vector<PolyArg> terms;
    std::vector<std::uint64_t> residues;
    for (std::uint64_t i = 0; i < 20; ++i) {
      terms.push_back(inputs[i % 3]);
      for (const std::uint64_t r : t.constants) residues.push_back(i % 3 == 0 ? r : i % 3 == 1 ? 1 : i);
    }
    d.backend().sum_constant_products(d.prepared(), d.output(t.ha.state), terms, residues);
  });
  direct("multiply", [=](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha), b = d.input(t.hb);
    d.backend().multiply(d.prepared(), d.output(with_state(t.ha, 3, t.level, Domain::ntt)), a, b);
  });
  direct("to_coefficient", [=](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha);
    d.backend().to_coefficient(d.prepared(), d.output(with_state(t.ha, 2, t.level, Domain::coefficient)), a);
  });
  direct("to_ntt", [=](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.coeff_a);
    d.backend().to_ntt(d.prepared(), d.output(with_state(t.ha, 2, t.level, Domain::ntt)), a);
  });
  direct("drop_limbs", [=](DirectCall& d, Side&, T t) {
    const auto a = d.input(t.ha);
    // The next level down whose primes are a window of this one's (the
    // next one with 64-bit words).
    int target = std::max(0, t.level - 1);
    while (target > 0 && !d.prepared().context().nested(t.level, target)) --target;
    d.backend().drop_limbs(d.prepared(), d.output(with_state(t.ha, 2, target, Domain::ntt)), a);
  });
  if (level >= 1) {
    direct("rescale", [=](DirectCall& d, Side&, T t) {
      const auto a = d.input(t.ha);
      d.backend().rescale(d.prepared(), d.output(with_state(t.ha, 2, t.level - 1, Domain::ntt)), a);
    });
    direct("rescale(3 components)", [=](DirectCall& d, Side&, T t) {
      const auto a = d.input(t.product);
      d.backend().rescale(d.prepared(), d.output(with_state(t.product, 3, t.level - 1, Domain::ntt)), a);
    });
    direct("multiply_relinearize_rescale", [=](DirectCall& d, Side& s, T t) {
      const auto a = d.input(t.ha), b = d.input(t.hb);
      d.backend().multiply_relinearize_rescale(d.prepared(), d.output(with_state(t.ha, 2, t.level - 1, Domain::ntt)), a,
                                               b, d.key(s.rk));
    });
  }
  if (level >= 2) {
    direct("drop_limbs(to 0)", [=](DirectCall& d, Side&, T t) {
      const auto a = d.input(t.ha);
      d.backend().drop_limbs(d.prepared(), d.output(with_state(t.ha, 2, 0, Domain::ntt)), a);
    });
  }
  direct("relinearize", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.product);
    d.backend().relinearize(d.prepared(), d.output(with_state(t.ha, 2, t.level, Domain::ntt)), a, d.key(s.rk));
  });
  direct("multiply_relinearize", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.ha), b = d.input(t.hb);
    d.backend().multiply_relinearize(d.prepared(), d.output(with_state(t.ha, 2, t.level, Domain::ntt)), a, b,
                                     d.key(s.rk));
  });
  direct("rotate(5)", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.ha);
    const std::uint32_t g = s.context().galois_element(5);
    d.backend().rotate(d.prepared(), d.output(t.ha.state), a, g, d.key(s.gk.keys.at(g)));
  });
  direct("rotate(conjugate)", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.ha);
    const std::uint32_t g = s.context().conjugation_element();
    d.backend().rotate(d.prepared(), d.output(t.ha.state), a, g, d.key(s.gk.keys.at(g)));
  });
  direct("rotate_hoisted(1,-3,2)", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.ha);
    std::vector<PolyArg> outs;
    std::vector<std::uint32_t> elements;
    std::vector<KeyArg> keys;
    for (long step : {1L, -3L, 2L}) {
      const std::uint32_t g = s.context().galois_element(step);
      outs.push_back(d.output(t.ha.state));
      elements.push_back(g);
      keys.push_back(d.key(s.gk.keys.at(g)));
    }
    d.backend().rotate_hoisted(d.prepared(), outs, a, elements, keys);
  });
  direct("rotate_sum(5,2,conjugate)", [=](DirectCall& d, Side& s, T t) {
    const std::vector<PolyArg> terms = {d.input(t.ha), d.input(t.hb), d.input(t.ha)};
    const std::vector<std::uint32_t> elements = {s.context().galois_element(5), s.context().galois_element(2),
                                                 s.context().conjugation_element()};
    std::vector<KeyArg> keys;
    for (std::uint32_t g : elements) keys.push_back(d.key(s.gk.keys.at(g)));
    d.backend().rotate_sum(d.prepared(), d.output(t.ha.state), terms, elements, keys);
  });
  cases.back().needs_rotate_sum = true;
  direct("rotate_hoisted(1,-3,conjugate)", [=](DirectCall& d, Side& s, T t) {
    const auto a = d.input(t.ha);
    const std::vector<std::uint32_t> elements = {s.context().galois_element(1), s.context().galois_element(-3),
                                                 s.context().conjugation_element()};
    std::vector<PolyArg> outs;
    std::vector<KeyArg> keys;
    for (std::uint32_t g : elements) {
      outs.push_back(d.output(t.ha.state));
      keys.push_back(d.key(s.gk.keys.at(g)));
    }
    d.backend().rotate_hoisted(d.prepared(), outs, a, elements, keys);
  });
  return cases;
}

// ---- results ----

// What one trial of one case gave.
struct Outcome {
  std::string failure;  // empty: passed
  bool message_checked = false;
  bool message_expected = false;
  double max_error = 0;
};

// Merges the trials of each case: a case passes if every trial passed; the
// detail is the first failure, or the largest message error over the trials.
class Recorder {
 public:
  void record(const std::string& name, int trial, const Outcome& o) {
    auto [it, inserted] = index_.try_emplace(name, results_.size());
    if (inserted) {
      results_.push_back({name, true, {}});
      merged_.push_back({});
    }
    CaseResult& r = results_[it->second];
    Merged& m = merged_[it->second];
    if (!o.failure.empty()) {
      if (r.passed) r.detail = (trial < 0 ? "" : "trial " + std::to_string(trial) + ": ") + o.failure;
      r.passed = false;
      return;
    }
    ++m.trials;
    m.checked = m.checked || o.message_checked;
    m.expected = m.expected || o.message_expected;
    m.max_error = std::max(m.max_error, o.max_error);
    if (!r.passed) return;
    std::ostringstream d;
    d << "residues equal";
    if (m.checked) {
      d << ", max message error " << m.max_error;
    } else if (m.expected) {
      d << " (message not checked: the scale does not fit Q at this level)";
    }
    d << " (" << m.trials << (m.trials == 1 ? " trial)" : " trials)");
    r.detail = d.str();
  }
  void fail(const std::string& name, const std::string& detail) { record(name, -1, Outcome{detail}); }
  std::vector<CaseResult> take() { return std::move(results_); }

 private:
  struct Merged {
    int trials = 0;
    bool checked = false;
    bool expected = false;
    double max_error = 0;
  };
  std::vector<CaseResult> results_;
  std::vector<Merged> merged_;
  std::map<std::string, std::size_t> index_;
};

// Runs the CPU reference, then the backend under test, each guarded; returns
// which side threw or reported problems, or "" when both ran.
template <class Reference, class Tested>
std::string run_both(Reference reference, Tested tested) {
  std::string ref_problems;
  try {
    reference(ref_problems);
  } catch (const std::exception& e) {
    return "the CPU reference threw (a suite or library bug): " + exception_text(e);
  }
  if (!ref_problems.empty()) return "the CPU reference: " + ref_problems;
  try {
    tested();
  } catch (const std::exception& e) {
    return "backend threw: " + exception_text(e);
  } catch (...) {
    return "backend threw a non-standard exception";
  }
  return "";
}

// Runs one case on both sides and compares.
Outcome run_case(ShapeSetup& s, const CaseDef& c, const Trial& t) {
  Outcome out;
  Outputs ref, got;
  std::vector<Message> expected;
  std::string got_problems;
  out.failure = run_both(
      [&](std::string& ref_problems) {
        ref = c.run(*s.reference, t, ref_problems);
        expected = c.expected(t);
      },
      [&] { got = c.run(*s.test, t, got_problems); });
  if (!out.failure.empty()) return out;
  if (got.size() != ref.size()) {
    out.failure =
        "backend returned " + std::to_string(got.size()) + " results, reference " + std::to_string(ref.size());
    return out;
  }
  std::string& failure = out.failure;
  out.message_expected = !expected.empty();
  for (std::size_t i = 0; i < ref.size() && failure.empty(); ++i) {
    const std::string which = ref.size() > 1 ? "result " + std::to_string(i) + ": " : "";
    if (!(got[i].state == ref[i].state)) {
      failure = which + "state differs: backend " + got[i].state.describe() + ", reference " + ref[i].state.describe();
      break;
    }
    if (auto diff = compare_residues(*s.context, got[i], ref[i]); !diff.empty()) failure = which + diff;
    if (i < expected.size()) {
      bool checked = false;
      std::string err;
      try {
        err = check_message(s, got[i], expected[i], out.max_error, checked);
      } catch (const std::exception& e) {
        err = "decrypting the backend's result threw: " + exception_text(e);
      }
      out.message_checked = out.message_checked || checked;
      if (!err.empty()) failure += (failure.empty() ? which : "; ") + err;
    }
  }
  if (!got_problems.empty()) failure += (failure.empty() ? "" : "; ") + got_problems;
  return out;
}

bool matches(const std::string& filter, const std::string& name) {
  return filter.empty() || name.find(filter) != std::string::npos;
}

// ---- the transform family ----

// A backend and its tables for one context.
struct Endpoint {
  Backend& backend;
  const BackendContext& prepared;
};

// 2 components x `limbs` limbs of random residues in the coefficient
// domain; each limb's first 64 coefficients are q - 1 and q - 2 in turn, the
// largest inputs of the butterflies' lazy reductions.
HostValue random_residues(const Context& ctx, int limbs, std::uint64_t seed) {
  HostValue h;
  h.state = {ctx.id(), ctx.word_size(), limbs - 1, ctx.params().scale, Domain::coefficient, Basis::Q, 2};
  h.data.resize(h.state.words(ctx));
  std::mt19937_64 gen(seed);
  for (int component = 0; component < h.state.components; ++component) {
    for (int limb = 0; limb < limbs; ++limb) {
      const u64 q = ctx.q()[static_cast<std::size_t>(limb)].value;
      u64* x = h.limb(ctx, component, limb);
      for (std::size_t k = 0; k < ctx.ring_degree(); ++k) x[k] = k < 64 ? q - 1 - k % 2 : gen() % q;
    }
  }
  return h;
}

// to_ntt (`forward`) or to_coefficient of `in`, called directly.
HostValue transform(const Context& ctx, const Endpoint& e, const HostValue& in, bool forward, std::string& problems) {
  DirectCall d(e.backend, e.prepared, ctx);
  const auto a = d.input(in);
  ValueState state = in.state;
  state.domain = forward ? Domain::ntt : Domain::coefficient;
  const auto out = d.output(state);
  if (forward) {
    e.backend.to_ntt(e.prepared, out, a);
  } else {
    e.backend.to_coefficient(e.prepared, out, a);
  }
  return d.finish(problems).at(0);
}

// One transform on both sides, compared; `ref` receives the reference's result.
Outcome run_transform(const Context& ctx, const Endpoint& reference, const Endpoint& test, const HostValue& in,
                      bool forward, HostValue& ref) {
  Outcome out;
  std::string got_problems;
  HostValue got;
  out.failure = run_both([&](std::string& ref_problems) { ref = transform(ctx, reference, in, forward, ref_problems); },
                         [&] { got = transform(ctx, test, in, forward, got_problems); });
  if (!out.failure.empty()) return out;
  out.failure = compare_residues(ctx, got, ref);
  if (!got_problems.empty()) out.failure += (out.failure.empty() ? "" : "; ") + got_problems;
  return out;
}

// Forward transforms of random residues, and inverse transforms of the
// reference's forward results (so that each case checks one direction).
void run_transforms(Recorder& recorder, const std::shared_ptr<Backend>& reference_backend,
                    const std::shared_ptr<Backend>& tested, const ConformanceOptions& options) {
  const std::vector<int> bit_sizes = options.transform_bits.empty() ? std::vector<int>{0} : options.transform_bits;
  const int trials = std::max(1, options.trials);
  for (int log_n : options.transform_log_n) {
    for (int bits : bit_sizes) {
      const CkksParameters params =
          bits == 0 ? small_params(log_n, 2, 1) : with_prime_bits(small_params(log_n, 2, 1), bits);
      const std::string shape = shape_name(log_n, 2, 1, bits);
      std::shared_ptr<const Context> context;
      std::shared_ptr<BackendContext> reference_tables, test_tables;
      for (int limbs : {3, 1}) {
        const std::string prefix = shape + "/limbs" + std::to_string(limbs) + "/transform:";
        const bool forward = matches(options.filter, prefix + "to_ntt");
        const bool inverse = matches(options.filter, prefix + "to_coefficient");
        if (!forward && !inverse) continue;
        const auto start = std::chrono::steady_clock::now();
        if (!context) {
          try {
            context = Context::create(params);
            reference_tables = reference_backend->prepare(context);
          } catch (const std::exception& e) {
            recorder.fail(shape + "/setup", "building the context or the reference: " + exception_text(e));
            break;
          }
          try {
            test_tables = tested->prepare(context);
          } catch (const std::exception& e) {
            recorder.fail(shape + "/setup", "backend prepare threw: " + exception_text(e));
            break;
          } catch (...) {
            recorder.fail(shape + "/setup", "backend prepare threw a non-standard exception");
            break;
          }
        }
        const Endpoint reference{*reference_backend, *reference_tables};
        const Endpoint test{*tested, *test_tables};
        for (int trial = 0; trial < trials; ++trial) {
          const HostValue in = random_residues(
              *context, limbs,
              mix(options.seed, {static_cast<std::uint64_t>(log_n), static_cast<std::uint64_t>(bits),
                                 static_cast<std::uint64_t>(limbs), static_cast<std::uint64_t>(trial)}));
          HostValue ref_forward, ref_inverse;
          const Outcome f = run_transform(*context, reference, test, in, true, ref_forward);
          if (forward) recorder.record(prefix + "to_ntt", trial, f);
          if (!inverse) continue;
          if (ref_forward.data.empty()) {
            recorder.record(prefix + "to_coefficient", trial,
                            Outcome{"no input: the reference's forward transform failed: " + f.failure});
            continue;
          }
          Outcome i = run_transform(*context, reference, test, ref_forward, false, ref_inverse);
          if (i.failure.empty() && ref_inverse.data != in.data) {
            i.failure = "the CPU reference's inverse transform does not give its input back (a library bug)";
          }
          recorder.record(prefix + "to_coefficient", trial, i);
        }
        if (options.verbose) {
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::cerr << "conformance: " << shape << "/limbs" << limbs << ": transforms x " << trials
                    << (trials == 1 ? " trial, " : " trials, ") << seconds << " s\n";
        }
      }
    }
  }
}

}  // namespace

int parse_level(const std::string& text) {
  if (text == "top") return top_level;
  if (text == "middle") return middle_level;
  if (text == "lowest") return 0;
  int level = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size() || level < 0) {
    throw InvalidArgumentError("level '" + text + "' is not a level: expected top, middle, lowest or a number >= 0");
  }
  return level;
}

void check_options(const ConformanceOptions& options) {
  shapes_of(options);
  for (int log_n : options.transform_log_n) check_log_n(log_n, "transform_log_n");
  for (int bits : options.transform_bits) {
    if (bits != 0) check_prime_bits(bits, "transform_bits");
  }
}

std::vector<CaseResult> run_conformance(const std::shared_ptr<Backend>& backend, const ConformanceOptions& options) {
  if (!backend) throw InvalidArgumentError("run_conformance: the backend is a null pointer");
  check_options(options);
  const std::vector<Shape> shapes = shapes_of(options);
  const auto reference_backend = cpu::make_cpu_backend({options.reference_threads});
  const auto tested = std::make_shared<PoisoningBackend>(backend);
  Recorder recorder;
  const int trials = std::max(1, options.trials);

  for (const Shape& shape : shapes) {
    std::unique_ptr<ShapeSetup> setup;
    for (int level : shape.levels) {
      const std::string shape_level = shape.name + "/level" + std::to_string(level);
      const std::string prefix = shape_level + "/";
      std::vector<CaseDef> cases;
      for (auto& c : make_cases(level)) {
        if (c.needs_rotate_sum && !backend->supports_rotate_sum()) continue;
        if (matches(options.filter, prefix + c.name)) cases.push_back(std::move(c));
      }
      if (cases.empty()) continue;
      const auto start = std::chrono::steady_clock::now();
      if (!setup) {
        try {
          setup = std::make_unique<ShapeSetup>(shape.params, mix(options.seed, shape.seed_parts));
          setup->reference = std::make_unique<Side>(setup->context, reference_backend, setup->relin, setup->galois);
        } catch (const std::exception& e) {
          recorder.fail(shape.name + "/setup", "building the context or the reference: " + exception_text(e));
          break;
        }
        try {
          setup->test = std::make_unique<Side>(setup->context, tested, setup->relin, setup->galois);
        } catch (const std::exception& e) {
          recorder.fail(shape.name + "/setup", "backend prepare or key upload threw: " + exception_text(e));
          break;
        } catch (...) {
          recorder.fail(shape.name + "/setup", "backend prepare or key upload threw a non-standard exception");
          break;
        }
      }
      for (int trial = 0; trial < trials; ++trial) {
        std::vector<std::uint64_t> parts = shape.seed_parts;
        parts.push_back(static_cast<std::uint64_t>(level));
        parts.push_back(static_cast<std::uint64_t>(trial));
        Trial t;
        try {
          t = make_trial(*setup, level, mix(options.seed, parts));
        } catch (const std::exception& e) {
          for (const auto& c : cases) {
            recorder.record(prefix + c.name, trial,
                            Outcome{"preparing the inputs on the reference threw: " + exception_text(e)});
          }
          continue;
        }
        for (const auto& c : cases) recorder.record(prefix + c.name, trial, run_case(*setup, c, t));
      }
      if (options.verbose) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cerr << "conformance: " << shape_level << ": " << cases.size() << " cases x " << trials
                  << (trials == 1 ? " trial, " : " trials, ") << seconds << " s\n";
      }
    }
  }
  run_transforms(recorder, reference_backend, tested, options);
  return recorder.take();
}

}  // namespace fhelium::conformance
