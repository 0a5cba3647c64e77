// Every bad input the Engine can meet raises a typed error whose message
// names the value, its state and what was expected; nothing aborts.
#include <gtest/gtest.h>

#include "fhelium/backend/forwarding_backend.hpp"
#include "helpers.hpp"

namespace fhelium::test {
namespace {

// Runs `body`, expects an exception of type E whose message contains every fragment.
template <class E, class Body>
void expect_error(Body body, std::initializer_list<const char*> fragments) {
  try {
    body();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string message = e.what();
    for (const char* fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos) << "message '" << message << "' lacks '" << fragment << "'";
    }
  }
}

class EngineErrors : public testing::Test {
 protected:
  EngineErrors() : f(small_params(12, 3)), a(f.random_message(1.0)), top(f.encrypt(a)), low(f.encrypt(a, 1)) {}
  Fixture f;
  Message a;
  Ciphertext top, low;
};

TEST_F(EngineErrors, MismatchedLevels) {
  expect_error<StateError>([&] { f.engine.add(top, low); }, {"add", "levels 3 and 1", "drop_to_level"});
  expect_error<StateError>([&] { f.engine.multiply(top, low); }, {"multiply", "levels 3 and 1"});
}

TEST_F(EngineErrors, MismatchedScales) {
  const auto other = f.encrypt(a, 3, std::ldexp(1.0, 30));
  expect_error<StateError>([&] { f.engine.add(top, other); }, {"scales 2^40 and 2^30", "expected equal scales"});
}

TEST_F(EngineErrors, MultiplyPlainSumOperands) {
  const Plaintext p = f.plaintext(a, 3, f.scale());
  const Plaintext p30 = f.plaintext(a, 3, std::ldexp(1.0, 30));
  const auto sum = [&](std::vector<Ciphertext> values, std::vector<Plaintext> plains) {
    return f.engine.multiply_plain_sum(values, plains);
  };
  expect_error<InvalidArgumentError>([&] { sum({}, {}); }, {"multiply_plain_sum", "no terms"});
  expect_error<InvalidArgumentError>(
      [&] {
        sum({top, top}, {p});
      },
      {"2 ciphertexts and 1 plaintexts", "one plaintext per ciphertext"});
  expect_error<StateError>([&] { sum({top, low}, {p, p}); }, {"multiply_plain_sum", "levels 3 and 1"});
  expect_error<StateError>([&] { sum({top, top}, {p, p30}); }, {"multiply_plain_sum", "scales 2^80 and 2^70"});
  expect_error<StateError>(
      [&] {
        sum({top, f.engine.to_coefficient(top)}, {p, p});
      },
      {"multiply_plain_sum", "expected the ntt domain"});
  expect_error<StateError>(
      [&] {
        sum({top, f.engine.multiply(top, top)}, {p, p});
      },
      {"multiply_plain_sum", "3 components, expected 2"});
  Fixture g(small_params(12, 3), 9);
  expect_error<StateError>([&] { sum({top, g.encrypt(a)}, {p, p}); }, {"multiply_plain_sum", "context"});
  // Ownership is checked before the level: another context's value at another level.
  expect_error<StateError>([&] { sum({top, g.encrypt(a, 1)}, {p, p}); }, {"multiply_plain_sum", "belongs to context"});
}

TEST_F(EngineErrors, MultiplyPlainSumsOperands) {
  const Plaintext p = f.plaintext(a, 3, f.scale());
  const auto sums = [&](std::vector<std::vector<Ciphertext>> values, std::vector<std::vector<Plaintext>> plains) {
    const std::vector<std::span<const Ciphertext>> v(values.begin(), values.end());
    const std::vector<std::span<const Plaintext>> q(plains.begin(), plains.end());
    return f.engine.multiply_plain_sums(v, q);
  };
  expect_error<InvalidArgumentError>([&] { sums({}, {}); }, {"multiply_plain_sums", "no groups"});
  expect_error<InvalidArgumentError>(
      [&] {
        sums({{top}, {top}}, {{p}});
      },
      {"multiply_plain_sums", "2 groups of ciphertexts and 1 of plaintexts"});
  // Each group by multiply_plain_sum's rules, then every group at the first's level and components.
  expect_error<InvalidArgumentError>(
      [&] {
        sums({{top}, {}}, {{p}, {}});
      },
      {"multiply_plain_sums: group 1", "no terms"});
  expect_error<StateError>([&] { sums({{top, low}}, {{p, p}}); }, {"multiply_plain_sums: group 0", "levels 3 and 1"});
  const Plaintext p1 = f.plaintext(a, 1, f.scale());
  expect_error<StateError>(
      [&] {
        sums({{top}, {low}}, {{p}, {p1}});
      },
      {"multiply_plain_sums: group 1 is at level 1", "expected group 0's level 3"});
  const Ciphertext three = f.engine.multiply(top, top);
  expect_error<StateError>(
      [&] {
        sums({{top}, {three}}, {{p}, {p}});
      },
      {"multiply_plain_sums: group 1 is at level 3 with 3 components", "expected group 0's level 3 with 2"});
  EXPECT_EQ(sums({{top, top}, {top}}, {{p, p}, {p}}).size(), 2u);
}

// The shape rules every backend's sum_product_groups applies first.
TEST_F(EngineErrors, SumProductGroupsShapes) {
  const auto o0 = f.engine.backend().allocate(8), o1 = f.engine.backend().allocate(8);
  const auto x = f.engine.backend().allocate(8), y = f.engine.backend().allocate(8);
  const PolyArg out0{o0.get(), 2, 4}, out1{o1.get(), 2, 4}, term{x.get(), 2, 4}, plain{y.get(), 1, 4};
  const std::vector<PolyArg> two_outs = {out0, out1}, terms = {term, term, term}, plains = {plain, plain, plain};
  const auto refused = [&](std::vector<PolyArg> outs, std::vector<PolyArg> in, std::vector<PolyArg> p,
                           std::vector<std::size_t> ends, const char* fragment) {
    expect_error<InvalidArgumentError>([&] { check_sum_product_groups(outs, in, p, ends); },
                                       {"sum_product_groups", fragment});
  };
  refused({}, terms, plains, {}, "no groups");
  refused(two_outs, terms, plains, {3}, "1 group ends for 2 outputs");
  refused(two_outs, terms, {plain}, {1, 3}, "3 ciphertexts and 1 plaintexts");
  refused(two_outs, terms, plains, {2, 2}, "group 1 ends at term 2, expected a term in (2, 3]");
  refused(two_outs, terms, plains, {1, 2}, "the last group ends at term 2, expected the term count 3");
  refused({out0, PolyArg{o1.get(), 2, 3}}, terms, plains, {1, 3}, "output 1 has 2 components of 3 limbs");
  refused(two_outs, {out1, term, term}, plains, {1, 3}, "output 1 is an operand of term 0");
  refused({out0, out0}, terms, plains, {1, 3}, "outputs 0 and 1 share a buffer");
  refused(two_outs, {term, PolyArg{x.get(), 2, 3}, term}, plains, {1, 3},
          "group 1 (its term 0 is term 1): sum_products: term 0 has");
  EXPECT_NO_THROW(check_sum_product_groups(two_outs, terms, plains, std::vector<std::size_t>{1, 3}));
}

TEST_F(EngineErrors, MultiplyScalarSumOperands) {
  const double s = f.scale();
  const auto sum = [&](std::vector<Ciphertext> values, std::vector<double> scalars, std::vector<double> scales) {
    return f.engine.multiply_scalar_sum(values, scalars, scales);
  };
  expect_error<InvalidArgumentError>([&] { sum({}, {}, {}); }, {"multiply_scalar_sum", "no terms"});
  expect_error<InvalidArgumentError>(
      [&] {
        sum({top, top}, {1.0}, {s, s});
      },
      {"2 ciphertexts, 1 values and 2 scalar scales", "one value and one scalar"});
  expect_error<InvalidArgumentError>(
      [&] {
        sum({top, top}, {1.0, 1.0}, {s, 0.5});
      },
      {"multiply_scalar_sum", "scalar scale 0.5", "expected a finite value >= 1"});
  expect_error<StateError>([&] { sum({top, low}, {1.0, 1.0}, {s, s}); }, {"multiply_scalar_sum", "levels 3 and 1"});
  expect_error<StateError>(
      [&] {
        sum({top, top}, {1.0, 1.0}, {s, 2.0});
      },
      {"multiply_scalar_sum", "scales 2^80 and 2^41"});
  expect_error<StateError>(
      [&] {
        sum({top, f.engine.multiply(top, top)}, {1.0, 1.0}, {s, s});
      },
      {"multiply_scalar_sum", "3 components, expected 2"});
  Fixture g(small_params(12, 3), 9);
  expect_error<StateError>(
      [&] {
        sum({top, g.encrypt(a)}, {1.0, 1.0}, {s, s});
      },
      {"multiply_scalar_sum", "belongs to context"});
}

// The shape rules every backend's sum_constant_products applies first.
TEST_F(EngineErrors, SumConstantProductsShapes) {
  const auto out = f.engine.backend().allocate(8), x = f.engine.backend().allocate(8);
  const PolyArg o{out.get(), 2, 4}, term{x.get(), 2, 4};
  const std::vector<std::uint64_t> eight(8, 1);
  const auto refused = [&](std::vector<PolyArg> terms, std::size_t residues, const char* fragment) {
    const std::vector<std::uint64_t> r(residues, 1);
    expect_error<InvalidArgumentError>([&] { check_sum_constant_products(o, terms, r); },
                                       {"sum_constant_products", fragment});
  };
  refused({}, 0, "no terms");
  refused({term, term}, 4, "4 residues for 2 terms of 4 limbs, expected 8 (one per term and limb)");
  refused({PolyArg{x.get(), 2, 3}}, 4, "term 0 has 2 components of 3 limbs, expected the output's 2 of 4");
  refused({o}, 4, "term 0 is the output");
  EXPECT_NO_THROW(check_sum_constant_products(o, std::vector<PolyArg>{term, term}, eight));
}

// The shape rules every backend's sum_products applies first.
TEST_F(EngineErrors, SumProductsShapes) {
  const auto out = f.engine.backend().allocate(8), x = f.engine.backend().allocate(8);
  const PolyArg o{out.get(), 2, 4}, term{x.get(), 2, 4}, p{x.get(), 1, 4};
  const auto refused = [&](std::vector<PolyArg> terms, std::vector<PolyArg> plains, const char* fragment) {
    expect_error<InvalidArgumentError>([&] { check_sum_products(o, terms, plains); }, {"sum_products", fragment});
  };
  refused({}, {}, "no terms");
  refused({term, term}, {p}, "2 ciphertexts and 1 plaintexts");
  refused({PolyArg{x.get(), 2, 3}}, {}, "term 0 has 2 components of 3 limbs, expected the output's 2 of 4");
  refused({o}, {}, "term 0 is the output");
  refused({term}, {PolyArg{x.get(), 2, 4}}, "plaintext 0 has 2 components of 4 limbs, expected 1 of 4");
  refused({term}, {PolyArg{out.get(), 1, 4}}, "plaintext 0 is the output");
  EXPECT_NO_THROW(check_sum_products(o, std::vector<PolyArg>{term, term}, std::vector<PolyArg>{p, p}));
}

// The shape rules of a relinearized product, which the defaults of
// multiply_relinearize and multiply_relinearize_rescale (and the cuda
// backend's own versions) apply before they read an operand.
TEST_F(EngineErrors, ProductShapes) {
  const Context& c = *f.context;
  const auto x = f.engine.backend().allocate(8);
  const PolyArg top_limbs{x.get(), 2, 4}, below{x.get(), 2, 3}, bottom{x.get(), 2, 1};
  const auto refused = [&](const PolyArg& out, const PolyArg& first, const PolyArg& second, bool rescaled,
                           std::initializer_list<const char*> fragments) {
    expect_error<InvalidArgumentError>([&] { check_product_operands(c, "product", out, first, second, rescaled); },
                                       fragments);
  };
  refused(top_limbs, PolyArg{x.get(), 3, 4}, top_limbs, false,
          {"product: first operand has 3 components of 4 limbs, expected 2 components at a level of context"});
  refused(top_limbs, PolyArg{x.get(), 2, 9}, top_limbs, false, {"first operand has 2 components of 9 limbs"});
  refused(top_limbs, top_limbs, below, false,
          {"second operand has 2 components of 3 limbs, expected 2 components of 4 limbs"});
  refused(below, top_limbs, top_limbs, false, {"output has 2 components of 3 limbs, expected 2 components of 4 limbs"});
  refused(top_limbs, top_limbs, top_limbs, true,
          {"output has 2 components of 4 limbs, expected 2 components of 3 limbs"});
  refused(bottom, bottom, bottom, true, {"the operands are at level 0"});
  EXPECT_NO_THROW(check_product_operands(c, "product", below, top_limbs, top_limbs, true));
  EXPECT_NO_THROW(check_product_operands(c, "product", top_limbs, top_limbs, top_limbs, false));
  // The backend's default runs the check before it allocates or reads.
  const auto prepared = f.engine.backend().prepare(f.context);
  const KeyArg key{x.get(), 1};
  expect_error<InvalidArgumentError>(
      [&] { f.engine.backend().multiply_relinearize_rescale(*prepared, below, top_limbs, below, key); },
      {"multiply_relinearize_rescale", "second operand has 2 components of 3 limbs"});
  expect_error<InvalidArgumentError>(
      [&] { f.engine.backend().multiply_relinearize(*prepared, below, top_limbs, top_limbs, key); },
      {"multiply_relinearize", "output has 2 components of 3 limbs"});
}

TEST_F(EngineErrors, MismatchedContexts) {
  Fixture g(small_params(12, 3), 9);
  const auto foreign = g.encrypt(a);
  expect_error<StateError>([&] { f.engine.add(top, foreign); }, {"context", "expected context"});
  expect_error<StateError>([&] { f.engine.relinearize(f.engine.multiply(top, top), g.relin_key()); },
                           {"relinearization key belongs to context"});
  expect_error<StateError>([&] { f.engine.multiply_relinearize(top, top, g.relin_key()); },
                           {"multiply_relinearize", "relinearization key belongs to context"});
  expect_error<StateError>([&] { f.engine.multiply_relinearize(top, foreign, f.relin_key()); },
                           {"multiply_relinearize", "context"});
}

TEST_F(EngineErrors, MismatchedDomains) {
  const auto coeff = f.engine.to_coefficient(top);
  expect_error<StateError>([&] { f.engine.add(top, coeff); }, {"ntt and coefficient domains"});
  expect_error<StateError>([&] { f.engine.multiply(coeff, top); }, {"coefficient domain, expected the ntt domain"});
  expect_error<StateError>([&] { f.engine.to_coefficient(coeff); }, {"expected the ntt domain"});
}

TEST_F(EngineErrors, MismatchedComponentCounts) {
  // Two scale-2^20 factors give a 3-component value at top's scale 2^40.
  const auto half = f.encrypt(a, 3, std::ldexp(1.0, 20));
  const auto three = f.engine.multiply(half, half);
  expect_error<StateError>([&] { f.engine.add(top, three); }, {"3 components, expected 2"});
  expect_error<StateError>([&] { f.engine.relinearize(top, f.relin_key()); }, {"2 components, expected 3"});
  expect_error<StateError>([&] { f.engine.multiply(three, top); }, {"3 components, expected 2"});
  expect_error<StateError>([&] { f.engine.multiply_relinearize(top, three, f.relin_key()); },
                           {"multiply_relinearize", "3 components, expected 2"});
}

TEST_F(EngineErrors, MissingKeys) {
  expect_error<MissingKeyError>([&] { f.engine.relinearize(f.engine.multiply(top, top), RelinKey{}); },
                                {"no relinearization key"});
  expect_error<MissingKeyError>([&] { f.engine.multiply_relinearize(top, top, RelinKey{}); },
                                {"multiply_relinearize", "no relinearization key"});
  const auto keys = f.galois_keys({1});
  expect_error<MissingKeyError>([&] { f.engine.rotate(top, 6, keys); }, {"rotation step 6", "missing steps 2, 4"});
  expect_error<MissingKeyError>([&] { f.engine.conjugate(top, keys); }, {"conjugation"});
  const std::vector<long> steps = {1, 3};
  expect_error<MissingKeyError>([&] { f.engine.rotate_hoisted(top, steps, keys); }, {"rotation step 3"});
}

// A CPU backend that reports no rotate_sum, as an older plugin does.
class NoRotateSum final : public ForwardingBackend {
 public:
  NoRotateSum() : ForwardingBackend(cpu::make_cpu_backend({})) {}
  bool supports_rotate_sum() const override { return false; }
};

TEST_F(EngineErrors, RotateSumRefusals) {
  const auto keys = f.galois_keys({1, 2});
  const std::vector<Ciphertext> mixed = {top, low};
  const std::vector<long> steps = {1, 2};
  expect_error<StateError>([&] { f.engine.rotate_sum(mixed, steps, keys); }, {"rotate_sum (term 1)", "levels 3 and 1"});
  const std::vector<Ciphertext> two = {top, top};
  const std::vector<long> one_step = {1};
  expect_error<InvalidArgumentError>([&] { f.engine.rotate_sum(two, one_step, keys); },
                                     {"2 terms and 1 steps", "one step per term"});
  expect_error<InvalidArgumentError>([&] { f.engine.rotate_sum({}, {}, keys); }, {"no terms"});
  const std::vector<long> unkeyed = {1, 3};
  expect_error<MissingKeyError>([&] { f.engine.rotate_sum(two, unkeyed, keys); }, {"rotation step 3"});
  const auto product = f.engine.multiply(top, top);
  const std::vector<Ciphertext> three = {top, product};
  expect_error<StateError>([&] { f.engine.rotate_sum(three, steps, keys); }, {"3 components, expected 2"});

  Fixture old(small_params(12, 3), 1, 0, std::make_shared<NoRotateSum>());
  const auto old_keys = old.galois_keys({1, 2});
  const auto x = old.encrypt(a);
  const std::vector<Ciphertext> terms = {x, x};
  expect_error<BackendError>([&] { old.engine.rotate_sum(terms, steps, old_keys); },
                             {"rotate_sum", "supports_rotate_sum() is false"});
  const std::vector<long> zeros = {0, 0};
  Message twice(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) twice[i] = 2.0 * a[i];
  EXPECT_LT(max_error(twice, old.decrypt(old.engine.rotate_sum(terms, zeros, old_keys))), 1e-5);
}

TEST_F(EngineErrors, RotationStepOutOfRange) {
  const auto keys = f.galois_keys({1});
  const long slots = static_cast<long>(f.slots());
  expect_error<InvalidArgumentError>([&] { f.engine.rotate(top, slots, keys); },
                                     {"rotation step 2048", "out of range", "-2047..2047"});
  expect_error<InvalidArgumentError>([&] { f.engine.rotate(top, -slots - 5, keys); }, {"out of range"});
}

TEST_F(EngineErrors, MessageLongerThanSlots) {
  const Message too_long(f.slots() + 1);
  expect_error<InvalidArgumentError>([&] { f.encoder.encode(too_long, 3, f.scale()); },
                                     {"2049 values", "slot count 2048"});
}

TEST_F(EngineErrors, RescaleAtLevelZero) {
  const auto bottom = f.encrypt(a, 0);
  expect_error<StateError>([&] { f.engine.rescale(bottom); }, {"level 0, expected level >= 1"});
  expect_error<StateError>([&] { f.engine.multiply_relinearize_rescale(bottom, bottom, f.relin_key()); },
                           {"multiply_relinearize_rescale", "level 0, expected level >= 1"});
  expect_error<StateError>([&] { f.engine.drop_to_level(low, 2); }, {"target level 2", "expected 0..1"});
}

TEST_F(EngineErrors, ParametersThatCannotBeBuilt) {
  CkksParameters p = small_params(12, 3);
  p.q_bits = {62};
  expect_error<ParameterError>([&] { Context::create(p); }, {"62 bits", "20..61"});
  p = small_params(17, 1);
  p.q_bits = {20, 20};  // only a handful of 20-bit primes are 1 mod 2^18
  expect_error<ParameterError>([&] { Context::create(p); }, {"20 bits"});
  p = small_params(12, 1);
  p.log_ring_degree = 18;
  expect_error<ParameterError>([&] { Context::create(p); }, {"2^18", "2^10 .. 2^17"});
}

TEST_F(EngineErrors, SecurityTableRefusesAndOptOutAccepts) {
  CkksParameters p = preset("slots8192_scale40_levels7");
  p.q_bits.assign(12, 40);
  expect_error<SecurityError>([&] { Context::create(p); }, {"log2(QP) = 5", "430", "allow_insecure"});
  p.allow_insecure = true;
  EXPECT_NO_THROW(Context::create(p));
}

TEST_F(EngineErrors, MalformedHostValues) {
  HostValue bad = f.engine.download(top);
  bad.data.pop_back();
  expect_error<StateError>([&] { f.engine.upload_ciphertext(bad); }, {"upload_ciphertext", "does not fit"});
  HostValue narrow = f.engine.download(top);  // states a word size its context does not have
  narrow.state.word_size = WordSize::bits32;
  expect_error<StateError>([&] { f.engine.upload_ciphertext(narrow); },
                           {"upload_ciphertext", "word 32 bits", "does not fit", "64-bit words"});
  HostSwitchKey key = f.keygen.relinearization_key(f.sk);
  key.data.resize(10);
  expect_error<StateError>([&] { f.engine.upload_relinearization_key(key); }, {"10 words", "does not fit"});
}

}  // namespace
}  // namespace fhelium::test
