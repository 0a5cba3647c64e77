// Program: builder, text form, prepare (state checks through the Engine),
// key requirements, link and run against the eager Engine on the CPU backend.
#include "fhelium/runtime/program.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "expectations.hpp"
#include "fhelium/backend/forwarding_backend.hpp"
#include "fhelium/runtime/clear_evaluator.hpp"
#include "helpers.hpp"

namespace fhelium::runtime {
namespace {

using test::Fixture;
using test::max_error;
using test::Message;
using test::rotate_left;
using test::error_of;
using test::small_params;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

Program matvec_program() {
  ProgramBuilder b("matvec");
  auto x = b.input("x");
  auto d0 = b.constant("d0", std::ldexp(1.0, 40));
  auto r = b.rotate(x, 1);
  auto t = b.multiply_plain(r, d0);
  b.name(t, "t");
  auto h = b.rotate_hoisted(x, {1, 2});
  b.name(h[0], "h0");
  b.name(h[1], "h1");
  auto y = b.rescale(t);
  b.name(y, "y");
  b.output("y", y);
  return b.build();
}

// A program using every OpKind, state-valid for two inputs at level >= 2.
Program every_op_program() {
  ProgramBuilder b("every_op");
  auto x = b.input("x");
  auto y = b.input("y");
  auto c1 = b.constant("c1");
  auto c2 = b.constant("c2", std::ldexp(1.0, 30));
  auto c3 = b.constant("c3", std::ldexp(1.0, 30));
  const auto out = [&](const std::string& name, ValueRef v) {
    b.name(v, name);
    b.output(name, v);
  };
  auto a = b.add(x, y);
  b.name(a, "a");
  auto s1 = b.sub(a, y);
  auto n = b.negate(s1);
  auto as = b.add_scalar(n, 0.1);
  out("ss", b.sub_scalar(as, -1.0 / 3.0));
  auto ap = b.add(x, c1);
  out("sp", b.sub(ap, c1));
  auto m = b.multiply(x, y);
  auto r = b.relinearize(m);
  out("rs", b.rescale(r));
  out("mp", b.multiply_plain(x, c2));
  out("ms", b.multiply_scalar(x, 1.5, std::ldexp(1.0, 20)));
  out("mi", b.multiply_integer(x, -3));
  out("dl", b.drop_to_level(x, 1));
  out("rot", b.rotate(x, 3));
  out("cj", b.conjugate(x));
  auto h = b.rotate_hoisted(x, {1, -2});
  out("h1", h[0]);
  out("h2", h[1]);
  auto co = b.to_coefficient(x);
  out("co", co);
  out("nt", b.to_ntt(co));
  out("s", b.sum({x, y, a}));
  out("mrr", b.multiply_relinearize_rescale(x, y));
  out("mps", b.multiply_plain_sum({x, y}, {c2, c3}));
  out("rsum", b.rotate_sum({x, y, a}, {3, -2, 0}));
  return b.build();
}

// ---- text form ----

TEST(ProgramText, PrintsTheDocumentedForm) {
  EXPECT_EQ(matvec_program().print(),
            "program matvec\n"
            "input x\n"
            "constant d0 scale=1099511627776\n"
            "%0 = rotate x step=1\n"
            "t = multiply_plain %0 d0\n"
            "h0, h1 = rotate_hoisted x steps=1,2\n"
            "y = rescale t\n"
            "output y = y\n");
}

TEST(ProgramText, RoundTripsEveryOperation) {
  const Program p = every_op_program();
  std::set<OpKind> ops;
  for (const auto& node : p.nodes()) ops.insert(node.op);
  EXPECT_EQ(ops.size(), 21u) << "the program should use every OpKind";
  const std::string text = p.print();
  const Program q = Program::parse(text);
  EXPECT_TRUE(q == p) << text << "\n---\n" << q.print();
  EXPECT_EQ(q.print(), text);
  EXPECT_EQ(q.input_names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(q.constant_names(), (std::vector<std::string>{"c1", "c2", "c3"}));
}

TEST(ProgramText, ScalarsRoundTripExactly) {
  ProgramBuilder b("scalars");
  auto x = b.input("x");
  const std::vector<double> values = {0.1, -1.0 / 3.0, 5e-324, 1.7976931348623157e308, -0.0, 123456789.123456789};
  ValueRef v = x;
  for (double d : values) v = b.add_scalar(v, d);
  v = b.multiply_scalar(v, std::nextafter(1.0, 2.0), std::ldexp(1.0, 40) + 1);
  v = b.multiply_integer(v, std::numeric_limits<std::int64_t>::min());
  b.constant("k", 3.0000000000000004);
  b.output("v", v);
  const Program p = b.build();
  const Program q = Program::parse(p.print());
  ASSERT_TRUE(q == p) << p.print();
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::signbit(q.nodes()[i].scalar), std::signbit(values[i]));
    EXPECT_EQ(q.nodes()[i].scalar, values[i]);
  }
}

TEST(ProgramText, ParsesCommentsBlankLinesAndNamesLikeGeneratedOnes) {
  const Program p = Program::parse(
      "# a comment\n"
      "program p\n"
      "\n"
      "input x   # trailing comment\n"
      "%1, %0 = rotate_hoisted x steps=2,-1\n"
      "%2 = add %0 %1\n"
      "output out = %2\n");
  ASSERT_EQ(p.nodes().size(), 2u);
  EXPECT_EQ(p.values()[1].name, "%1");
  EXPECT_EQ(p.values()[2].name, "%0");
  EXPECT_EQ(p.nodes()[0].steps, (std::vector<long>{2, -1}));
  EXPECT_EQ(p.outputs(), (std::vector<std::pair<std::string, int>>{{"out", 3}}));
  EXPECT_TRUE(Program::parse(p.print()) == p);
}

TEST(ProgramText, ParseErrorsNameTheLineAndToken) {
  const std::string head = "program p\ninput x\nconstant d\n";  // lines 1-3
  const auto parse_error = [&](const std::string& body) {
    return error_of<InvalidArgumentError>([&] { Program::parse(head + body); });
  };
  std::string e = parse_error("y = frobnicate x\noutput y = y\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("frobnicate"), std::string::npos) << e;
  EXPECT_NE(e.find("multiply_relinearize_rescale"), std::string::npos) << "lists the known operations: " << e;

  e = parse_error("y = negate x\nz = add y w\noutput z = z\n");
  EXPECT_TRUE(starts_with(e, "line 5: ")) << e;
  EXPECT_NE(e.find("undefined value 'w'"), std::string::npos) << e;

  e = parse_error("y = add x\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("add expects 2 arguments, got 1"), std::string::npos) << e;

  e = parse_error("y = negate x x\n");
  EXPECT_NE(e.find("negate expects 1 arguments, got 2"), std::string::npos) << e;

  e = parse_error("y = negate x\ny = negate y\n");
  EXPECT_TRUE(starts_with(e, "line 5: ")) << e;
  EXPECT_NE(e.find("duplicate name 'y'"), std::string::npos) << e;

  e = parse_error("input d\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("duplicate name 'd'"), std::string::npos) << e;

  e = parse_error("\n\ny = rotate x step=one\n");
  EXPECT_TRUE(starts_with(e, "line 6: ")) << e;
  EXPECT_NE(e.find("'one'"), std::string::npos) << e;

  e = parse_error("y = rotate x\n");
  EXPECT_NE(e.find("rotate needs attribute 'step='"), std::string::npos) << e;

  e = parse_error("y = rotate x step=1 by=2\n");
  EXPECT_NE(e.find("rotate has no attribute 'by'"), std::string::npos) << e;

  e = parse_error("y = add_scalar x value=1e999\n");
  EXPECT_NE(e.find("'1e999'"), std::string::npos) << e;

  e = parse_error("a, b = rotate x step=1\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("rotate defines 1 results, got 2 names"), std::string::npos) << e;

  // The builder's own checks get the line number too.
  e = parse_error("y = negate d\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("'d' is a plaintext constant"), std::string::npos) << e;

  e = parse_error("y = multiply_plain x x\n");
  EXPECT_NE(e.find("expected a plaintext constant"), std::string::npos) << e;

  e = parse_error("output y = nothing\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;
  EXPECT_NE(e.find("undefined value 'nothing'"), std::string::npos) << e;

  e = parse_error("program again\n");
  EXPECT_TRUE(starts_with(e, "line 4: ")) << e;

  e = parse_error("frob x\n");
  EXPECT_NE(e.find("unknown keyword 'frob'"), std::string::npos) << e;

  e = parse_error("y = negate x\n");  // no output
  EXPECT_NE(e.find("declares no output"), std::string::npos) << e;
}

TEST(ProgramBuilderTest, RefusesMalformedPrograms) {
  ProgramBuilder b("p");
  auto x = b.input("x");
  auto d = b.constant("d");
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.build(); }).find("declares no output"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.input("x"); }).find("already used"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.input("a b"); }).find("not a valid name"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.multiply_plain(x, x); }).find("expected a plaintext constant"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.add(d, x); }).find("'d' is a plaintext constant"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.negate(ValueRef{42}); }).find("not a value"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.rotate_hoisted(x, {}); }).find("no steps"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.sum({}); }).find("no arguments"), std::string::npos);
  EXPECT_NE(
      error_of<InvalidArgumentError>([&] { b.multiply_plain_sum({x}, {x}); }).find("expected a plaintext constant"),
      std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] {
              b.multiply_plain_sum({x, x}, {d});
            }).find("one constant per value"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.add_scalar(x, NAN); }).find("not finite"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.output("o", d); }).find("plaintext constant"), std::string::npos);
  auto y = b.negate(x);
  b.output("unnamed", y);
  EXPECT_EQ(b.build().values()[2].name, "%0") << "results get generated names";
  b.name(y, "y");
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.name(b.negate(y), "x"); }).find("already used"), std::string::npos);
  b.output("y", y);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { b.output("y", y); }).find("declared twice"), std::string::npos);
  EXPECT_EQ(b.build().outputs().size(), 2u);
  EXPECT_EQ(b.build().values()[2].name, "y");
}

TEST(ProgramBuilderTest, OpKindNames) {
  for (int i = 0; i <= static_cast<int>(OpKind::multiply_plain_sum); ++i) {
    const auto op = static_cast<OpKind>(i);
    EXPECT_EQ(op_kind_from_string(to_string(op)), op);
  }
  const auto e = error_of<InvalidArgumentError>([] { op_kind_from_string("fma"); });
  EXPECT_NE(e.find("'fma'"), std::string::npos) << e;
  EXPECT_NE(e.find("rotate_hoisted"), std::string::npos) << e;
}

// ---- prepare, link, run on the CPU backend ----

class ProgramRun : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    f_ = new Fixture(small_params(12, 3), 7);
    relin_ = new RelinKey(f_->relin_key());
    galois_ = new GaloisKeys(f_->galois_keys({1, 2, 3, -2}, true));
  }
  static void TearDownTestSuite() {
    delete galois_;
    delete relin_;
    delete f_;
  }

  Fixture& f() { return *f_; }
  const Engine& engine() { return f_->engine; }
  ValueState top_state() {
    ValueState s;
    s.context_id = f().context->id();
    s.level = f().context->max_level();
    s.scale = f().scale();
    return s;
  }
  std::vector<u64> residues(const Ciphertext& ct) { return engine().download(ct).data; }
  Materials keys() {
    Materials m;
    m.relinearization_key = relin_;
    m.galois_keys = galois_;
    return m;
  }

  static Fixture* f_;
  static RelinKey* relin_;
  static GaloisKeys* galois_;
};

Fixture* ProgramRun::f_ = nullptr;
RelinKey* ProgramRun::relin_ = nullptr;
GaloisKeys* ProgramRun::galois_ = nullptr;

TEST_F(ProgramRun, MatvecMatchesEagerResidueForResidueAndTheClearComputation) {
  // y = rescale(d0 * x + d1 * rot(x, 1) + d2 * rot(x, 2) + d3 * rot(x, 3))
  ProgramBuilder b("matvec");
  auto x = b.input("x");
  std::vector<ValueRef> d;
  for (int i = 0; i < 4; ++i) d.push_back(b.constant("d" + std::to_string(i)));
  auto h = b.rotate_hoisted(x, {1, 2});
  auto r3 = b.rotate(x, 3);
  auto s = b.sum({b.multiply_plain(x, d[0]), b.multiply_plain(h[0], d[1]), b.multiply_plain(h[1], d[2]),
                  b.multiply_plain(r3, d[3])});
  b.output("y", b.rescale(s));
  const Program program = b.build();

  const PreparedProgram prepared = program.prepare(f().context, top_state());
  const int L = f().context->max_level();
  EXPECT_EQ(prepared.state("y").level, L - 1);
  EXPECT_EQ(prepared.state("x"), top_state());
  for (const auto& [name, state] : prepared.constant_states()) {
    EXPECT_EQ(state.level, L) << name;
    EXPECT_EQ(state.components, 1) << name;
    EXPECT_EQ(state.scale, f().scale()) << name;
  }
  const KeyRequirements needed = prepared.required_keys();
  EXPECT_FALSE(needed.relinearization);
  EXPECT_FALSE(needed.conjugation);
  EXPECT_EQ(needed.rotation_steps, (std::set<long>{1, 2, 3}));
  EXPECT_EQ(needed.galois_elements(*f().context),
            (std::set<std::uint32_t>{f().context->galois_element(1), f().context->galois_element(2),
                                     f().context->galois_element(3)}));

  const Message xm = f().random_message(1.0);
  std::vector<Message> dm;
  Materials materials = keys();
  materials.relinearization_key = nullptr;  // not needed
  for (int i = 0; i < 4; ++i) {
    dm.push_back(f().random_message(1.0));
    materials.constants["d" + std::to_string(i)] = dm.back();
  }
  const Executable exe = link(prepared, engine(), materials);
  const Ciphertext cx = f().encrypt(xm);
  const ValueTree out = exe(ValueTree(ValueTree::Map{{"x", cx}}));
  ASSERT_TRUE(out.is_map());
  ASSERT_EQ(out.map().size(), 1u);
  const Ciphertext& y = out.at("y").ciphertext();
  EXPECT_EQ(y.state, prepared.state("y"));

  // The same operations, eagerly.
  std::vector<Plaintext> pd;
  for (int i = 0; i < 4; ++i) pd.push_back(f().plaintext(dm[static_cast<std::size_t>(i)], L, f().scale()));
  const long steps[] = {1, 2};
  const auto eh = engine().rotate_hoisted(cx, steps, *galois_);
  const auto er3 = engine().rotate(cx, 3, *galois_);
  const std::vector<Ciphertext> terms = {engine().multiply_plain(cx, pd[0]), engine().multiply_plain(eh[0], pd[1]),
                                         engine().multiply_plain(eh[1], pd[2]), engine().multiply_plain(er3, pd[3])};
  const Ciphertext expected = engine().rescale(engine().sum(terms));
  EXPECT_EQ(residues(y), residues(expected));

  Message clear(xm.size());
  for (std::size_t j = 0; j < xm.size(); ++j) {
    for (std::size_t i = 0; i < 4; ++i) clear[j] += dm[i][j] * rotate_left(xm, static_cast<long>(i))[j];
  }
  EXPECT_LT(max_error(clear, f().decrypt(y)), 1e-4);

  // Constants bound as encoded plaintexts give the same residues.
  Materials encoded = keys();
  for (int i = 0; i < 4; ++i) encoded.constants["d" + std::to_string(i)] = pd[static_cast<std::size_t>(i)];
  const ValueTree again = link(prepared, engine(), encoded).run(ValueTree(ValueTree::Map{{"x", cx}}));
  EXPECT_EQ(residues(again.at("y").ciphertext()), residues(expected));
}

TEST_F(ProgramRun, MultiplyRelinearizeRescaleMatchesEagerAndClear) {
  const Program program = Program::parse(
      "program square_sum\n"
      "input a\n"
      "input b\n"
      "p = multiply_relinearize_rescale a b\n"
      "q = multiply a b\n"
      "r = relinearize q\n"
      "s = rescale r\n"
      "t = add p s\n"
      "u = add_scalar t value=0.5\n"
      "output u = u\n"
      "output p = p\n");
  const PreparedProgram prepared = program.prepare(f().context, top_state());
  EXPECT_TRUE(prepared.required_keys().relinearization);
  EXPECT_TRUE(prepared.required_keys().rotation_steps.empty());
  EXPECT_NE(prepared.describe().find("u: {"), std::string::npos) << prepared.describe();

  const Message am = f().random_message(1.0), bm = f().random_message(1.0);
  const Ciphertext ca = f().encrypt(am), cb = f().encrypt(bm);
  Materials materials;
  materials.relinearization_key = relin_;
  const ValueTree out = link(prepared, engine(), materials).run(ValueTree(ValueTree::Map{{"a", ca}, {"b", cb}}));

  const Ciphertext ep = engine().multiply_relinearize_rescale(ca, cb, *relin_);
  const Ciphertext es = engine().rescale(engine().relinearize(engine().multiply(ca, cb), *relin_));
  const Ciphertext eu = engine().add_scalar(engine().add(ep, es), 0.5);
  EXPECT_EQ(residues(out.at("p").ciphertext()), residues(ep));
  EXPECT_EQ(residues(out.at("u").ciphertext()), residues(eu));

  Message clear(am.size());
  for (std::size_t i = 0; i < am.size(); ++i) clear[i] = 2.0 * am[i] * bm[i] + 0.5;
  EXPECT_LT(max_error(clear, f().decrypt(out.at("u").ciphertext())), 1e-4);
}

TEST_F(ProgramRun, EveryOperationMatchesEager) {
  const Program program = every_op_program();
  const PreparedProgram prepared = program.prepare(f().context, top_state());
  const int L = f().context->max_level();
  const Message xm = f().random_message(1.0), ym = f().random_message(1.0), c1m = f().random_message(1.0),
                c2m = f().random_message(1.0), c3m = f().random_message(1.0);
  const Ciphertext x = f().encrypt(xm), y = f().encrypt(ym);
  const Plaintext c1 = f().plaintext(c1m, L, f().scale());
  const Plaintext c2 = f().plaintext(c2m, L, std::ldexp(1.0, 30));
  const Plaintext c3 = f().plaintext(c3m, L, std::ldexp(1.0, 30));
  EXPECT_EQ(prepared.constant_states().at("c2"), c2.state);

  Materials materials = keys();
  materials.constants["c1"] = c1;   // encoded
  materials.constants["c2"] = c2m;  // clear, encoded at link
  materials.constants["c3"] = c3;
  const ValueTree out = link(prepared, engine(), materials).run(ValueTree(ValueTree::Map{{"x", x}, {"y", y}}));

  const Engine& e = engine();
  const GaloisKeys& g = *galois_;
  const auto a = e.add(x, y);
  const long hoisted[] = {1, -2};
  const auto h = e.rotate_hoisted(x, hoisted, g);
  const auto co = e.to_coefficient(x);
  const std::vector<Ciphertext> batch = {x, y, a};
  const std::vector<Ciphertext> terms = {x, y};
  const std::vector<Plaintext> plains = {c2, c3};
  const long sum_steps[] = {3, -2, 0};
  const std::map<std::string, Ciphertext> expected = {
      {"ss", e.sub_scalar(e.add_scalar(e.negate(e.sub(a, y)), 0.1), -1.0 / 3.0)},
      {"sp", e.sub(e.add(x, c1), c1)},
      {"rs", e.rescale(e.relinearize(e.multiply(x, y), *relin_))},
      {"mp", e.multiply_plain(x, c2)},
      {"ms", e.multiply_scalar(x, 1.5, std::ldexp(1.0, 20))},
      {"mi", e.multiply_integer(x, -3)},
      {"dl", e.drop_to_level(x, 1)},
      {"rot", e.rotate(x, 3, g)},
      {"cj", e.conjugate(x, g)},
      {"h1", h[0]},
      {"h2", h[1]},
      {"co", co},
      {"nt", e.to_ntt(co)},
      {"s", e.sum(batch)},
      {"mrr", e.multiply_relinearize_rescale(x, y, *relin_)},
      {"mps", e.multiply_plain_sum(terms, plains)},
      {"rsum", e.rotate_sum(batch, sum_steps, g)},
  };
  ASSERT_EQ(out.map().size(), expected.size());
  for (const auto& [name, ct] : expected) {
    const Ciphertext& got = out.at(name).ciphertext();
    EXPECT_EQ(got.state, ct.state) << name;
    EXPECT_EQ(got.state, prepared.state(name)) << name;
    EXPECT_TRUE(residues(got) == residues(ct)) << name;
  }
  // Every output against the clear evaluator (the constants' clear values).
  const std::size_t slots = f().context->ring_degree() / 2;
  const auto clear = evaluate_clear(program, {{"x", xm}, {"y", ym}}, {{"c1", c1m}, {"c2", c2m}, {"c3", c3m}}, slots);
  ASSERT_EQ(clear.size(), expected.size());
  for (const auto& [name, values] : clear) {
    EXPECT_LT(max_error(values, f().decrypt(out.at(name).ciphertext())), 1e-4) << name;
  }
  // The clear evaluator itself on a few outputs computed by hand.
  EXPECT_LT(max_error(rotate_left(xm, 3), clear.at("rot")), 1e-15);
  Message triple(slots);
  for (std::size_t i = 0; i < slots; ++i) triple[i] = -3.0 * (i < xm.size() ? xm[i] : 0.0);
  EXPECT_LT(max_error(triple, clear.at("mi")), 1e-15);
  EXPECT_THROW(evaluate_clear(program, {{"x", xm}}, {{"c1", c1m}, {"c2", c2m}, {"c3", c3m}}, slots),
               InvalidArgumentError);
  EXPECT_THROW(
      evaluate_clear(program, {{"x", Message(slots + 1)}, {"y", ym}}, {{"c1", c1m}, {"c2", c2m}, {"c3", c3m}}, slots),
      InvalidArgumentError);
}

TEST_F(ProgramRun, RotationsComposeFromPowerOfTwoKeysButHoistedOnesNeedTheExactKey) {
  const GaloisKeys pow2 = f().galois_keys({1, 2});
  Materials materials;
  materials.galois_keys = &pow2;

  const Program rotate = Program::parse("program r\ninput x\ny = rotate x step=3\noutput y = y\n");
  const PreparedProgram prepared = rotate.prepare(f().context, top_state());
  const Ciphertext cx = f().encrypt(f().random_message(1.0));
  const ValueTree out = link(prepared, engine(), materials).run(ValueTree(ValueTree::Map{{"x", cx}}));
  EXPECT_EQ(residues(out.at("y").ciphertext()), residues(engine().rotate(cx, 3, pow2)));

  const Program hoisted = Program::parse("program h\ninput x\na, b = rotate_hoisted x steps=1,3\noutput b = b\n");
  const std::string e =
      error_of<MissingKeyError>([&] { link(hoisted.prepare(f().context, top_state()), engine(), materials); });
  EXPECT_NE(e.find("rotation step 3 (Galois element " + std::to_string(f().context->galois_element(3))),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("rotation step 1 "), std::string::npos) << e;

  const Program summed = Program::parse("program s\ninput x\ny = rotate_sum x x steps=1,3\noutput y = y\n");
  const std::string s =
      error_of<MissingKeyError>([&] { link(summed.prepare(f().context, top_state()), engine(), materials); });
  EXPECT_NE(s.find("rotation step 3 (Galois element"), std::string::npos) << s;
  EXPECT_NE(s.find("needed exactly by rotate_hoisted or rotate_sum"), std::string::npos) << s;
}

// rotate_sum has no fallback: link names the node and the backend without it.
TEST_F(ProgramRun, LinkRefusesRotateSumOnABackendWithoutIt) {
  class NoRotateSum final : public ForwardingBackend {
   public:
    NoRotateSum() : ForwardingBackend(cpu::make_cpu_backend({})) {}
    bool supports_rotate_sum() const override { return false; }
  };
  const Program summed = Program::parse("program s\ninput x\ny = rotate_sum x x steps=1,2\noutput y = y\n");
  const PreparedProgram prepared = summed.prepare(f().context, top_state());
  const Engine old(f().context, std::make_shared<NoRotateSum>());
  const GaloisKeys keys =
      old.upload_galois_keys(std::vector<HostSwitchKey>{f().keygen.galois_key(f().sk, f().context->galois_element(1)),
                                                        f().keygen.galois_key(f().sk, f().context->galois_element(2))});
  Materials materials;
  materials.galois_keys = &keys;
  const std::string e = error_of<BackendError>([&] { link(prepared, old, materials); });
  EXPECT_NE(e.find("node 'y = rotate_sum'"), std::string::npos) << e;
  EXPECT_NE(e.find("supports_rotate_sum() is false"), std::string::npos) << e;
}

TEST_F(ProgramRun, LinkListsEveryMissingKey) {
  const Program program = Program::parse(
      "program keys\ninput x\ninput y\n"
      "m = multiply x y\nr = relinearize m\n"
      "a = rotate r step=3\nb = rotate a step=1\nc = rotate b step=-5\nd = conjugate c\n"
      "e = multiply_relinearize_rescale d d\n"
      "z = rotate e step=0\n"
      "output z = z\n");
  const PreparedProgram prepared = program.prepare(f().context, top_state());
  const KeyRequirements needed = prepared.required_keys();
  EXPECT_TRUE(needed.relinearization);
  EXPECT_TRUE(needed.conjugation);
  EXPECT_EQ(needed.rotation_steps, (std::set<long>{-5, 1, 3})) << "step 0 needs no key";
  const Context& ctx = *f().context;
  EXPECT_EQ(needed.galois_elements(ctx), (std::set<std::uint32_t>{ctx.galois_element(-5), ctx.galois_element(1),
                                                                  ctx.galois_element(3), ctx.conjugation_element()}));

  std::string e = error_of<MissingKeyError>([&] { link(prepared, engine(), Materials{}); });
  EXPECT_NE(e.find("missing keys: relinearization key; rotation step -5 (Galois element " +
                   std::to_string(ctx.galois_element(-5)) + "); rotation step 1 (Galois element " +
                   std::to_string(ctx.galois_element(1)) + "); rotation step 3 (Galois element " +
                   std::to_string(ctx.galois_element(3)) + "); conjugation key"),
            std::string::npos)
      << e;

  // With the suite's keys (1, 2, 3, -2, conjugation) only step -5 is
  // missing: -5 = 2043 slots left is not composable from keys 1 and 2.
  e = error_of<MissingKeyError>([&] { link(prepared, engine(), keys()); });
  EXPECT_NE(e.find("missing keys: rotation step -5 "), std::string::npos) << e;
  EXPECT_EQ(e.find("relinearization"), std::string::npos) << e;
  EXPECT_EQ(e.find("conjugation"), std::string::npos) << e;
}

TEST_F(ProgramRun, LinkChecksConstants) {
  const Program program = Program::parse(
      "program consts\ninput x\nconstant d0\nconstant d1 scale=1048576\n"
      "a = multiply_plain x d0\nb = rescale a\nc = multiply_plain b d1\noutput c = c\n");
  const PreparedProgram prepared = program.prepare(f().context, top_state());
  const int L = f().context->max_level();
  EXPECT_EQ(prepared.constant_states().at("d0").level, L);
  EXPECT_EQ(prepared.constant_states().at("d1").level, L - 1);
  EXPECT_EQ(prepared.constant_states().at("d1").scale, 1048576.0);
  const Message m = f().random_message(1.0);

  std::string e = error_of<InvalidArgumentError>([&] { link(prepared, engine(), Materials{}); });
  EXPECT_NE(e.find("unbound constants: d0, d1"), std::string::npos) << e;

  Materials materials;
  materials.constants["d0"] = m;
  e = error_of<InvalidArgumentError>([&] { link(prepared, engine(), materials); });
  EXPECT_NE(e.find("unbound constants: d1"), std::string::npos) << e;

  materials.constants["d1"] = m;
  materials.constants["d2"] = m;
  e = error_of<InvalidArgumentError>([&] { link(prepared, engine(), materials); });
  EXPECT_NE(e.find("unknown constants: d2"), std::string::npos) << e;
  materials.constants.erase("d2");

  materials.constants["d1"] = f().plaintext(m, L, 1048576.0);  // level L, expected L - 1
  e = error_of<StateError>([&] { link(prepared, engine(), materials); });
  EXPECT_NE(e.find("constant d1: level is 3, expected 2"), std::string::npos) << e;

  materials.constants["d1"] = f().plaintext(m, L - 1, f().scale());
  e = error_of<StateError>([&] { link(prepared, engine(), materials); });
  EXPECT_NE(e.find("constant d1: scale is"), std::string::npos) << e;
  EXPECT_EQ(e.find("level"), std::string::npos) << e;

  materials.constants["d1"] = f().plaintext(m, L - 1, 1048576.0);
  EXPECT_NO_THROW(link(prepared, engine(), materials));

  materials.constants["d0"] = Message(f().slots() * 2, 1.0);  // more values than slots
  e = error_of<InvalidArgumentError>([&] { link(prepared, engine(), materials); });
  EXPECT_NE(e.find("constant d0: "), std::string::npos) << e;
}

TEST_F(ProgramRun, RunChecksInputsBeforeAnyWork) {
  const Program program = Program::parse("program two\ninput x\ninput y\ns = add x y\no = rescale s\noutput o = o\n");
  const PreparedProgram prepared = program.prepare(f().context, top_state());
  const Executable exe = link(prepared, engine(), Materials{});
  const Ciphertext cx = f().encrypt(f().random_message(1.0));
  const Ciphertext low = f().encrypt(f().random_message(1.0), 2);
  const Ciphertext big = f().encrypt(f().random_message(1.0), -1, std::ldexp(1.0, 45));

  std::string e = error_of<InvalidArgumentError>([&] { exe.run(ValueTree(ValueTree::Map{{"x", cx}})); });
  EXPECT_NE(e.find("missing input 'y'"), std::string::npos) << e;
  e = error_of<InvalidArgumentError>([&] { exe.run(ValueTree(ValueTree::Map{{"x", cx}, {"y", cx}, {"w", cx}})); });
  EXPECT_NE(e.find("'w' is not an input"), std::string::npos) << e;
  e = error_of<StateError>([&] { exe.run(ValueTree(ValueTree::Map{{"x", cx}, {"y", low}})); });
  EXPECT_NE(e.find("input y: level is 2, expected 3"), std::string::npos) << e;
  e = error_of<StateError>([&] { exe.run(ValueTree(ValueTree::Map{{"x", big}, {"y", cx}})); });
  EXPECT_NE(e.find("input x: scale is"), std::string::npos) << e;
  e = error_of<InvalidArgumentError>([&] {
    exe.run(ValueTree(ValueTree::Map{{"x", cx}, {"y", f().plaintext(f().random_message(1.0), 3, f().scale())}}));
  });
  EXPECT_NE(e.find("input y is a plaintext, expected a ciphertext"), std::string::npos) << e;
  e = error_of<InvalidArgumentError>([&] { exe.run(ValueTree(ValueTree::List{cx, cx})); });
  EXPECT_NE(e.find("expected a map"), std::string::npos) << e;
  EXPECT_NO_THROW(exe.run(ValueTree(ValueTree::Map{{"x", cx}, {"y", cx}})));
}

TEST_F(ProgramRun, PrepareReportsTheFirstIllegalOperationByName) {
  const auto prepare_error = [&]<class E>(std::type_identity<E>, const std::string& text, const ValueState& s) {
    return error_of<E>([&] { Program::parse(text).prepare(f().context, s); });
  };
  const ValueState top = top_state();
  std::string e = prepare_error(std::type_identity<StateError>{},
                                "program p\ninput x\nconstant d\nt = multiply_plain x d\nr = rescale t\n"
                                "y = add x r\noutput y = y\n",
                                top);
  EXPECT_TRUE(starts_with(e, "y (add x, r): add: operands are at levels 3 and 2")) << e;

  e = prepare_error(std::type_identity<StateError>{},
                    "program p\ninput x\nm = multiply x x\nr = rotate m step=1\n"
                    "z = rescale r\noutput z = z\n",
                    top);
  EXPECT_TRUE(starts_with(e, "r (rotate m step=1): rotate: operand has 3 components, expected 2")) << e;

  ValueState bottom = top;
  bottom.level = 0;
  e = prepare_error(std::type_identity<StateError>{},
                    "program p\ninput x\na = negate x\nb = rescale a\nc = rescale b\noutput c = c\n", bottom);
  EXPECT_TRUE(starts_with(e, "b (rescale a): rescale: operand is at level 0")) << e;

  // Only the first of two illegal operations is reported.
  e = prepare_error(std::type_identity<StateError>{},
                    "program p\ninput x\nc = to_coefficient x\nh0, h1 = rotate_hoisted c steps=1,2\n"
                    "m = multiply c c\noutput m = m\n",
                    top);
  EXPECT_TRUE(starts_with(e, "h0, h1 (rotate_hoisted c steps=1,2): rotate_hoisted: operand is in the coefficient"))
      << e;

  e = prepare_error(std::type_identity<StateError>{},
                    "program p\ninput x\nconstant d\na = multiply_plain x d\nb = rescale a\n"
                    "c = multiply_plain b d\noutput c = c\n",
                    top);
  EXPECT_TRUE(starts_with(e,
                          "c (multiply_plain b, d): constant d is used here at level 2 and by "
                          "a (multiply_plain x, d) at level 3"))
      << e;

  e = prepare_error(std::type_identity<StateError>{},
                    "program p\ninput x\nconstant d scale=1024\na = add x d\noutput a = a\n", top);
  EXPECT_TRUE(starts_with(e, "a (add x, d): add_plain: operands have scales")) << e;

  e = prepare_error(std::type_identity<InvalidArgumentError>{},
                    "program p\ninput x\nr = rotate x step=5000\noutput r = r\n", top);
  EXPECT_TRUE(starts_with(e, "r (rotate x step=5000): rotate: rotation step 5000 is out of range")) << e;

  e = prepare_error(std::type_identity<InvalidArgumentError>{},
                    "program p\ninput x\nr = multiply_scalar x value=2 scale=0.5\noutput r = r\n", top);
  EXPECT_TRUE(starts_with(e, "r (multiply_scalar x value=2 scale=0.5): multiply_scalar: scalar scale")) << e;

  e = prepare_error(std::type_identity<StateError>{}, "program p\ninput x\nr = drop_to_level x level=4\noutput r = r\n",
                    top);
  EXPECT_TRUE(starts_with(e, "r (drop_to_level x level=4): drop_to_level: target level 4 is out of range")) << e;

  ValueState three = top;
  three.components = 1;
  e = prepare_error(std::type_identity<StateError>{}, "program p\ninput x\nr = negate x\noutput r = r\n", three);
  EXPECT_TRUE(starts_with(e, "input x: ")) << e;

  const Program two = Program::parse("program p\ninput x\ninput y\ns = add x y\noutput s = s\n");
  e = error_of<InvalidArgumentError>([&] { two.prepare(f().context, {{"x", top}}); });
  EXPECT_NE(e.find("no state was given for input 'y'"), std::string::npos) << e;
  e = error_of<InvalidArgumentError>([&] { two.prepare(f().context, {{"x", top}, {"y", top}, {"q", top}}); });
  EXPECT_NE(e.find("'q' is not an input"), std::string::npos) << e;
  ValueState other_scale = top;
  other_scale.scale *= 2;
  e = error_of<StateError>([&] { two.prepare(f().context, {{"x", top}, {"y", other_scale}}); });
  EXPECT_TRUE(starts_with(e, "s (add x, y): add: operands have scales")) << e;
}

// Counts the live buffers of a CPU backend (the buffers themselves are the
// CPU backend's, shared through an aliasing deleter).
class CountingBackend final : public Backend {
 public:
  CountingBackend() : inner_(cpu::make_cpu_backend({1})) {}
  int live() const { return live_->load(); }
  int peak() const { return peak_; }
  void reset_peak() { peak_ = live(); }

  std::string name() const override { return "counting"; }
  std::shared_ptr<BackendContext> prepare(std::shared_ptr<const Context> c) override { return inner_->prepare(c); }
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    auto inner = inner_->allocate(bytes);
    peak_ = std::max(peak_, ++*live_);
    auto counter = live_;
    Buffer* raw = inner.get();
    return std::shared_ptr<Buffer>(raw, [inner = std::move(inner), counter](Buffer*) mutable {
      --*counter;
      inner.reset();
    });
  }
  void upload(Buffer& d, const void* s, std::size_t n) override { inner_->upload(d, s, n); }
  void download(const Buffer& s, void* d, std::size_t n) override { inner_->download(s, d, n); }
  void synchronize() override { inner_->synchronize(); }
  void add(const BackendContext& c, const PolyArg& o, const PolyArg& a, const PolyArg& b) override {
    inner_->add(c, o, a, b);
  }
  void sub(const BackendContext& c, const PolyArg& o, const PolyArg& a, const PolyArg& b) override {
    inner_->sub(c, o, a, b);
  }
  void negate(const BackendContext& c, const PolyArg& o, const PolyArg& a) override { inner_->negate(c, o, a); }
  void add_constant(const BackendContext& c, const PolyArg& o, const PolyArg& a, std::span<const std::uint64_t> r,
                    bool ntt) override {
    inner_->add_constant(c, o, a, r, ntt);
  }
  void multiply_constant(const BackendContext& c, const PolyArg& o, const PolyArg& a,
                         std::span<const std::uint64_t> r) override {
    inner_->multiply_constant(c, o, a, r);
  }
  // The cpu backend's fused version (the default would store each product).
  void sum_constant_products(const BackendContext& c, const PolyArg& o, std::span<const PolyArg> a,
                             std::span<const std::uint64_t> r) override {
    inner_->sum_constant_products(c, o, a, r);
  }
  void multiply_plain(const BackendContext& c, const PolyArg& o, const PolyArg& a, const PolyArg& p) override {
    inner_->multiply_plain(c, o, a, p);
  }
  // Records each call's group count, then runs the default (sum_products per group).
  void sum_product_groups(const BackendContext& c, std::span<const PolyArg> o, std::span<const PolyArg> a,
                          std::span<const PolyArg> p, std::span<const std::size_t> ends) override {
    group_calls.push_back(o.size());
    Backend::sum_product_groups(c, o, a, p, ends);
  }
  std::vector<std::size_t> group_calls;
  void multiply(const BackendContext& c, const PolyArg& o, const PolyArg& a, const PolyArg& b) override {
    inner_->multiply(c, o, a, b);
  }
  void to_ntt(const BackendContext& c, const PolyArg& o, const PolyArg& a) override { inner_->to_ntt(c, o, a); }
  void to_coefficient(const BackendContext& c, const PolyArg& o, const PolyArg& a) override {
    inner_->to_coefficient(c, o, a);
  }
  void rescale(const BackendContext& c, const PolyArg& o, const PolyArg& a) override { inner_->rescale(c, o, a); }
  void drop_limbs(const BackendContext& c, const PolyArg& o, const PolyArg& a) override { inner_->drop_limbs(c, o, a); }
  void relinearize(const BackendContext& c, const PolyArg& o, const PolyArg& a, const KeyArg& k) override {
    inner_->relinearize(c, o, a, k);
  }
  void rotate(const BackendContext& c, const PolyArg& o, const PolyArg& a, std::uint32_t g, const KeyArg& k) override {
    inner_->rotate(c, o, a, g, k);
  }
  void rotate_hoisted(const BackendContext& c, std::span<const PolyArg> o, const PolyArg& a,
                      std::span<const std::uint32_t> g, std::span<const KeyArg> k) override {
    inner_->rotate_hoisted(c, o, a, g, k);
  }

 private:
  std::shared_ptr<Backend> inner_;
  std::shared_ptr<std::atomic<int>> live_ = std::make_shared<std::atomic<int>>(0);
  int peak_ = 0;
};

TEST_F(ProgramRun, LongProgramsKeepOnlyLiveValues) {
  auto backend = std::make_shared<CountingBackend>();
  const Engine counted(f().context, backend);
  ProgramBuilder b("chain");
  auto x = b.input("x");
  auto side = b.add_scalar(x, 1.0);  // live through the whole chain
  ValueRef v = x;
  for (int i = 0; i < 300; ++i) {
    v = b.negate(v);
    b.negate(v);  // a dead value, released at once
  }
  b.output("y", b.add(v, side));
  const PreparedProgram prepared = b.build().prepare(f().context, top_state());
  const Executable exe = link(prepared, counted, Materials{});

  const Message m = f().random_message(1.0);
  const Ciphertext cx = counted.upload_ciphertext(
      f().encryptor.encrypt(f().encoder.encode(m, f().context->max_level(), f().scale()), f().pk));
  const int before = backend->live();
  backend->reset_peak();
  const ValueTree out = exe.run(ValueTree(ValueTree::Map{{"x", cx}}));
  EXPECT_LE(backend->peak() - before, 4) << "live buffers grew with the program's length";
  EXPECT_EQ(backend->live() - before, 1) << "only the output stays";
  // 300 negations of x are x again: y = x + (x + 1).
  const Ciphertext expected = engine().add(engine().upload_ciphertext(counted.download(cx)),
                                           engine().add_scalar(engine().upload_ciphertext(counted.download(cx)), 1.0));
  EXPECT_EQ(counted.download(out.at("y").ciphertext()).data, engine().download(expected).data);
}

// multiply_scalar nodes that only a sum reads run inside it (one
// multiply_scalar_sum): their products are never stored, and the residues
// are the eager ones. A product read twice, or an output, is its own node.
TEST_F(ProgramRun, ScalarProductsReadOnlyByASumRunInsideIt) {
  auto backend = std::make_shared<CountingBackend>();
  const Engine counted(f().context, backend);
  const double s20 = std::ldexp(1.0, 20);
  ProgramBuilder b("leaves");
  auto x = b.input("x");
  auto y = b.input("y");
  std::vector<ValueRef> products;
  for (int i = 0; i < 8; ++i) products.push_back(b.multiply_scalar(i % 2 ? y : x, 0.25 * i - 1.0, s20));
  b.output("fused", b.sum(products));
  auto kept = b.multiply_scalar(x, 0.75, s20);   // an output too
  auto twice = b.multiply_scalar(y, -2.0, s20);  // read twice
  b.output("kept", kept);
  b.output("mixed", b.sum({kept, twice, twice}));
  const PreparedProgram prepared = b.build().prepare(f().context, top_state());
  const Executable exe = link(prepared, counted, Materials{});

  const Message xm = f().random_message(1.0), ym = f().random_message(1.0);
  const auto encrypt = [&](const Message& m) {
    return f().encryptor.encrypt(f().encoder.encode(m, f().context->max_level(), f().scale()), f().pk);
  };
  const HostValue hx = encrypt(xm), hy = encrypt(ym);
  const Ciphertext cx = counted.upload_ciphertext(hx), cy = counted.upload_ciphertext(hy);
  const int before = backend->live();
  backend->reset_peak();
  const ValueTree out = exe.run(ValueTree(ValueTree::Map{{"x", cx}, {"y", cy}}));
  // The fused sum stores its output, not eight products: at most the four
  // outputs are live at once.
  EXPECT_LE(backend->peak() - before, 4) << "the fused products were stored";

  const Engine& e = engine();
  const Ciphertext ex = e.upload_ciphertext(hx), ey = e.upload_ciphertext(hy);
  std::vector<Ciphertext> eager;
  for (int i = 0; i < 8; ++i) eager.push_back(e.multiply_scalar(i % 2 ? ey : ex, 0.25 * i - 1.0, s20));
  const Ciphertext eager_kept = e.multiply_scalar(ex, 0.75, s20), eager_twice = e.multiply_scalar(ey, -2.0, s20);
  const std::vector<Ciphertext> mixed = {eager_kept, eager_twice, eager_twice};
  EXPECT_EQ(counted.download(out.at("fused").ciphertext()).data, e.download(e.sum(eager)).data);
  EXPECT_EQ(counted.download(out.at("kept").ciphertext()).data, e.download(eager_kept).data);
  EXPECT_EQ(counted.download(out.at("mixed").ciphertext()).data, e.download(e.sum(mixed)).data);
  EXPECT_EQ(out.at("fused").ciphertext().state, prepared.state("fused"));
}

// Consecutive multiply_plain_sums at one level run as one backend call
// (sum_product_groups; a linear transform's giant groups), with the eager
// residues; one that reads an earlier one's result, or sits at another
// level, starts a call of its own.
TEST_F(ProgramRun, ConsecutivePlainSumsRunAsOneCall) {
  auto backend = std::make_shared<CountingBackend>();
  const Engine counted(f().context, backend);
  ProgramBuilder b("groups");
  auto x = b.input("x");
  auto y = b.input("y");
  std::vector<ValueRef> d;
  for (int i = 0; i < 6; ++i) d.push_back(b.constant("d" + std::to_string(i)));
  auto g0 = b.multiply_plain_sum({x, y}, {d[0], d[1]});
  auto g1 = b.multiply_plain_sum({y, x}, {d[2], d[3]});
  auto g2 = b.multiply_plain_sum({x}, {d[1]});
  auto g3 = b.multiply_plain_sum({g1}, {d[0]});  // reads g1's result
  const int lower = f().context->max_level() - 1;
  auto g4 = b.multiply_plain_sum({b.drop_to_level(x, lower), b.drop_to_level(y, lower)}, {d[4], d[5]});
  auto g5 = b.multiply_plain_sum({x, y}, {d[3], d[0]});  // after g4, at another level
  for (const auto& [name, g] : {std::pair{"g0", g0}, {"g1", g1}, {"g2", g2}, {"g3", g3}, {"g4", g4}, {"g5", g5}}) {
    b.output(name, g);
  }
  const PreparedProgram prepared = b.build().prepare(f().context, {{"x", top_state()}, {"y", top_state()}});
  Materials materials;
  std::vector<Message> dm;
  for (int i = 0; i < 6; ++i) {
    dm.push_back(f().random_message(1.0));
    materials.constants["d" + std::to_string(i)] = dm.back();
  }
  const Executable exe = link(prepared, counted, materials);
  const Message xm = f().random_message(1.0), ym = f().random_message(1.0);
  const HostValue hx = f().encryptor.encrypt(f().encoder.encode(xm, f().context->max_level(), f().scale()), f().pk);
  const HostValue hy = f().encryptor.encrypt(f().encoder.encode(ym, f().context->max_level(), f().scale()), f().pk);
  const ValueTree out =
      exe.run(ValueTree(ValueTree::Map{{"x", counted.upload_ciphertext(hx)}, {"y", counted.upload_ciphertext(hy)}}));
  EXPECT_EQ(backend->group_calls, (std::vector<std::size_t>{3})) << "g0, g1 and g2 in one call, the others alone";

  const Engine& e = engine();
  const Ciphertext ex = e.upload_ciphertext(hx), ey = e.upload_ciphertext(hy);
  const auto plain = [&](int i, int level) {
    return e.upload_plaintext(f().encoder.encode(dm[static_cast<std::size_t>(i)], level, f().scale()));
  };
  const int top = f().context->max_level();
  const std::vector<Plaintext> p01 = {plain(0, top), plain(1, top)}, p23 = {plain(2, top), plain(3, top)},
                               p1 = {plain(1, top)}, p0 = {plain(0, top)}, p30 = {plain(3, top), plain(0, top)},
                               p45 = {plain(4, top - 1), plain(5, top - 1)};
  const std::vector<Ciphertext> eager = {
      e.multiply_plain_sum(std::vector<Ciphertext>{ex, ey}, p01),
      e.multiply_plain_sum(std::vector<Ciphertext>{ey, ex}, p23),
      e.multiply_plain_sum(std::vector<Ciphertext>{ex}, p1),
      e.multiply_plain_sum(std::vector<Ciphertext>{e.multiply_plain_sum(std::vector<Ciphertext>{ey, ex}, p23)}, p0),
      e.multiply_plain_sum(std::vector<Ciphertext>{e.drop_to_level(ex, top - 1), e.drop_to_level(ey, top - 1)}, p45),
      e.multiply_plain_sum(std::vector<Ciphertext>{ex, ey}, p30)};
  for (std::size_t i = 0; i < eager.size(); ++i) {
    const std::string name = "g" + std::to_string(i);
    EXPECT_EQ(counted.download(out.at(name).ciphertext()).data, e.download(eager[i]).data) << name;
  }
}

}  // namespace
}  // namespace fhelium::runtime
