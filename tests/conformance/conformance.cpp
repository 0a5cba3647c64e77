#include "conformance.hpp"

#include <cxxabi.h>

#include <algorithm>
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
#include <typeinfo>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/encoder.hpp"
#include "fhelium/encryptor.hpp"
#include "fhelium/engine.hpp"
#include "fhelium/error.hpp"
#include "fhelium/keys.hpp"

namespace fhelium::conformance {
namespace {

using Message = std::vector<std::complex<double>>;
using Outputs = std::vector<HostValue>;

constexpr double message_tolerance = 1e-4;
constexpr double scale_bits = 40;

// ---- parameters of the shapes ----

// Q primes 55 + levels x 40 bits, `specials` special primes of 55 bits
// (alpha = specials Q primes per key-switching digit). At the levels tested
// (top, middle, 0 or 1) the digits are: K1 always full; K2 2+2+1, 2+1 and 2;
// K3 3+3+1, 3+1 and 2 (partial last digits, one, two and three digits).
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

// Top, middle, and 0 (first set) or 1 (the others, so rescale runs at 1 -> 0).
std::vector<int> levels_of(const ParamSet& set, bool first) {
  std::vector<int> levels = {set.levels, set.levels / 2, first ? 0 : 1};
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
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

std::uint64_t mix(std::uint64_t seed, std::initializer_list<std::uint64_t> parts) {
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

Message rotate_left(const Message& m, long step) {
  const auto n = static_cast<long>(m.size());
  Message out(m.size());
  for (long i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)] = m[static_cast<std::size_t>(((i + step) % n + n) % n)];
  }
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
  // The backend's own version (ForwardingBackend's default would run its multiply and relinearize).
  void multiply_relinearize(const BackendContext& c, const PolyArg& out, const PolyArg& a, const PolyArg& b,
                            const KeyArg& key) override {
    inner().multiply_relinearize(c, out, a, b, key);
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
  HostValue pb;                // plaintext of b
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
  t.pb = s.encoder.encode(t.b, level, scale);
  const Side& r = *s.reference;
  const auto ra = r.ct(t.ha);
  const auto rb = r.ct(t.hb);
  const auto product = r.engine.multiply(ra, rb);
  t.product = r.get(product);
  t.relinearized = r.get(r.engine.relinearize(product, r.rk));
  t.coeff_a = r.get(r.engine.to_coefficient(ra));
  t.coeff_b = r.get(r.engine.to_coefficient(rb));
  for (int i = 0; i <= level; ++i) {
    t.constants.push_back(mrng() % s.context->q()[static_cast<std::size_t>(i)].value);
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

// log2 of q_0 ... q_level.
double log_q(const Context& ctx, int level) {
  double bits = 0;
  for (int i = 0; i <= level; ++i) bits += std::log2(static_cast<double>(ctx.q()[static_cast<std::size_t>(i)].value));
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
  if (!(err < message_tolerance)) {
    std::ostringstream o;
    o << "decrypted message differs from the expected one: max error " << err << " (tolerance " << message_tolerance
      << ")";
    return o.str();
  }
  return {};
}

// ---- direct Backend calls on poisoned buffers ----

// Uploads inputs, allocates outputs filled with 0xFF plus one guard limb past
// the end, and after the call checks the guard and that the inputs are unchanged.
class DirectCall {
 public:
  explicit DirectCall(Side& side) : side_(side), n_(side.context().ring_degree()) {}

  PolyArg input(const HostValue& v) {
    auto buffer = side_.backend().allocate(v.data.size() * sizeof(u64));
    side_.backend().upload(*buffer, v.data.data(), v.data.size() * sizeof(u64));
    inputs_.push_back({buffer, &v});
    return {buffer.get(), v.state.components, v.state.limbs(side_.context())};
  }

  PolyArg output(const ValueState& state) {
    const std::size_t words = state.words(side_.context());
    const std::vector<u64> poisoned(words + n_, poison);
    auto buffer = side_.backend().allocate(poisoned.size() * sizeof(u64));
    side_.backend().upload(*buffer, poisoned.data(), poisoned.size() * sizeof(u64));
    outputs_.push_back({buffer, state});
    return {buffer.get(), state.components, state.limbs(side_.context())};
  }

  static KeyArg key(const SwitchKey& k) { return {k.buffer.get(), k.digits}; }
  const BackendContext& prepared() const { return *side_.prepared; }
  Backend& backend() const { return side_.backend(); }

  // Downloads the outputs; reports overruns and modified inputs in `problems`.
  Outputs finish(std::string& problems) {
    side_.backend().synchronize();
    Outputs outs;
    for (std::size_t o = 0; o < outputs_.size(); ++o) {
      const auto& [buffer, state] = outputs_[o];
      const std::size_t words = state.words(side_.context());
      std::vector<u64> all(words + n_);
      side_.backend().download(*buffer, all.data(), all.size() * sizeof(u64));
      const auto guard =
          std::find_if(all.begin() + static_cast<std::ptrdiff_t>(words), all.end(), [](u64 w) { return w != poison; });
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
      side_.backend().download(*buffer, now.data(), now.size() * sizeof(u64));
      if (now != original->data) problems += "input " + std::to_string(i) + " was modified; ";
    }
    return outs;
  }

 private:
  Side& side_;
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

  // Multiplication family.
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
    // ModRaise: residues against cpu; back at level 0 it is the input again.
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
        [=](T t) { return one(rotate_left(t.a, step)); });
  }
  def(
      "rotate(7,composed)", [](Side& s, T t, P) { return single(s.get(s.engine.rotate(s.ct(t.ha), 7, s.gk))); },
      [=](T t) { return one(rotate_left(t.a, 7)); });
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
        for (long step : hoisted_steps) m.push_back(rotate_left(t.a, step));
        return m;
      });

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
    d.backend().drop_limbs(d.prepared(), d.output(with_state(t.ha, 2, std::max(0, t.level - 1), Domain::ntt)), a);
  });
  if (level >= 1) {
    direct("rescale", [=](DirectCall& d, Side&, T t) {
      const auto a = d.input(t.ha);
      d.backend().rescale(d.prepared(), d.output(with_state(t.ha, 2, t.level - 1, Domain::ntt)), a);
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

// Runs one case on both sides and compares.
Outcome run_case(ShapeSetup& s, const CaseDef& c, const Trial& t) {
  Outcome out;
  Outputs ref, got;
  std::vector<Message> expected;
  std::string ref_problems, got_problems;
  try {
    ref = c.run(*s.reference, t, ref_problems);
    expected = c.expected(t);
  } catch (const std::exception& e) {
    out.failure = "the CPU reference threw (a suite or library bug): " + exception_text(e);
    return out;
  }
  if (!ref_problems.empty()) {
    out.failure = "the CPU reference: " + ref_problems;
    return out;
  }
  try {
    got = c.run(*s.test, t, got_problems);
  } catch (const std::exception& e) {
    out.failure = "backend threw: " + exception_text(e);
    return out;
  } catch (...) {
    out.failure = "backend threw a non-standard exception";
    return out;
  }
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

}  // namespace

std::vector<CaseResult> run_conformance(const std::shared_ptr<Backend>& backend, const ConformanceOptions& options) {
  if (!backend) throw InvalidArgumentError("run_conformance: the backend is a null pointer");
  const auto reference_backend = cpu::make_cpu_backend({options.reference_threads});
  const auto tested = std::make_shared<PoisoningBackend>(backend);
  Recorder recorder;
  const int trials = std::max(1, options.trials);

  for (int log_n : options.log_n) {
    for (std::size_t set_index = 0; set_index < std::size(param_sets); ++set_index) {
      const ParamSet& set = param_sets[set_index];
      const std::string shape = "N" + std::to_string(std::uint64_t{1} << log_n) + "/L" + std::to_string(set.levels) +
                                "/K" + std::to_string(set.specials);
      std::unique_ptr<ShapeSetup> setup;
      for (int level : levels_of(set, set_index == 0)) {
        const std::string shape_level = shape + "/level" + std::to_string(level);
        const std::string prefix = shape_level + "/";
        std::vector<CaseDef> cases;
        for (auto& c : make_cases(level)) {
          if (matches(options.filter, prefix + c.name)) cases.push_back(std::move(c));
        }
        if (cases.empty()) continue;
        const auto start = std::chrono::steady_clock::now();
        if (!setup) {
          try {
            setup = std::make_unique<ShapeSetup>(
                small_params(log_n, set.levels, set.specials),
                mix(options.seed, {static_cast<std::uint64_t>(log_n), static_cast<std::uint64_t>(set.levels),
                                   static_cast<std::uint64_t>(set.specials)}));
            setup->reference = std::make_unique<Side>(setup->context, reference_backend, setup->relin, setup->galois);
          } catch (const std::exception& e) {
            recorder.fail(shape + "/setup", "building the context or the reference: " + exception_text(e));
            break;
          }
          try {
            setup->test = std::make_unique<Side>(setup->context, tested, setup->relin, setup->galois);
          } catch (const std::exception& e) {
            recorder.fail(shape + "/setup", "backend prepare or key upload threw: " + exception_text(e));
            break;
          } catch (...) {
            recorder.fail(shape + "/setup", "backend prepare or key upload threw a non-standard exception");
            break;
          }
        }
        for (int trial = 0; trial < trials; ++trial) {
          Trial t;
          try {
            t = make_trial(*setup, level,
                           mix(options.seed, {static_cast<std::uint64_t>(log_n), static_cast<std::uint64_t>(set.levels),
                                              static_cast<std::uint64_t>(set.specials),
                                              static_cast<std::uint64_t>(level), static_cast<std::uint64_t>(trial)}));
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
  }
  return recorder.take();
}

}  // namespace fhelium::conformance
