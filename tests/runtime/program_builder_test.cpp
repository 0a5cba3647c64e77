// ProgramBuilder bound to a context: states inferred node by node by the
// Engine's rules, a failing node rejected with its label and tag and without
// a trace, and prepare() equal to a replay of the built program.
#include <gtest/gtest.h>

#include <cmath>

#include "fhelium/runtime/program.hpp"
#include "helpers.hpp"

namespace fhelium::runtime {
namespace {

using test::Fixture;
using test::small_params;

struct BoundBuilder : ::testing::Test {
  Fixture f{small_params(11, 3)};
  ValueState top() { return f.encrypt(test::Message(4, 0.5)).state; }
};

TEST_F(BoundBuilder, StatesFollowTheEngine) {
  ProgramBuilder b(f.context, "p");
  const ValueState x_state = top();
  auto x = b.input("x", x_state);
  auto sq = b.multiply(x, x);
  EXPECT_EQ(b.state(sq).components, 3);
  EXPECT_DOUBLE_EQ(b.state(sq).scale, x_state.scale * x_state.scale);
  auto r = b.rescale(b.relinearize(sq));
  EXPECT_EQ(b.state(r).level, x_state.level - 1);
  EXPECT_EQ(b.state(r).components, 2);
  const double q = static_cast<double>(f.context->q()[static_cast<std::size_t>(x_state.level)].value);
  EXPECT_DOUBLE_EQ(b.state(r).scale, x_state.scale * x_state.scale / q);
  auto c = b.constant("c", test::Message(4, 1.0));
  EXPECT_EQ(b.state(c).level, f.context->max_level());  // until a use fixes it
  auto m = b.multiply_plain(r, c);
  EXPECT_EQ(b.state(c).level, b.state(r).level);
  EXPECT_EQ(b.state(m).level, b.state(r).level);
  b.output("y", m);
  const PreparedProgram from_builder = b.prepare();
  const PreparedProgram replayed = b.build().prepare(f.context, x_state);
  EXPECT_EQ(from_builder.describe(), replayed.describe());
  EXPECT_EQ(from_builder.required_keys().relinearization, true);
  EXPECT_EQ(b.constant_values().at("c").size(), 4u);
}

TEST_F(BoundBuilder, AFailingNodeNamesItselfAndLeavesNoTrace) {
  ProgramBuilder b(f.context, "p");
  auto x = b.input("x", top());
  auto down = b.rescale(x);
  const std::size_t nodes_before = 1;
  b.tag("pipe.yaml:3:5: step 'bad'");
  try {
    b.add(x, down);
    FAIL() << "adding values at different levels must fail";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("pipe.yaml:3:5: step 'bad': ", 0), 0u) << message;
    EXPECT_NE(message.find("add"), std::string::npos) << message;
  }
  b.tag("");
  b.output("y", down);
  EXPECT_EQ(b.build().nodes().size(), nodes_before);
  // Still usable, and the failed node's generated name is free again.
  auto ok = b.add(down, down);
  EXPECT_EQ(b.state(ok).level, b.state(down).level);
}

TEST_F(BoundBuilder, ConstantsKeepOneLevel) {
  ProgramBuilder b(f.context, "p");
  auto x = b.input("x", top());
  auto c = b.constant("c");
  auto a = b.add(x, c);
  auto low = b.rescale(a);
  EXPECT_THROW(b.add(low, c), StateError);
  EXPECT_EQ(b.state(c).level, b.state(x).level);
}

TEST_F(BoundBuilder, WrongUseIsRefused) {
  ProgramBuilder bound(f.context, "p");
  EXPECT_THROW(bound.input("x"), InvalidArgumentError);
  ValueState wrong = top();
  wrong.components = 1;
  EXPECT_THROW(bound.input("x", wrong), StateError);
  auto x = bound.input("x", top());  // the refused input did not take the name
  EXPECT_THROW(bound.constant("c", test::Message(f.context->ring_degree() / 2 + 1)), InvalidArgumentError);
  EXPECT_THROW(bound.constant("n", test::Message{{std::nan(""), 0.0}}), InvalidArgumentError);
  EXPECT_EQ(bound.fresh_name("x"), "x0");
  EXPECT_EQ(bound.fresh_name("z"), "z");
  (void)x;
  ProgramBuilder unbound("q");
  auto y = unbound.input("y");
  EXPECT_THROW(unbound.state(y), InvalidArgumentError);
  EXPECT_THROW(unbound.prepare(), InvalidArgumentError);
  EXPECT_THROW(ProgramBuilder(nullptr, "r"), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::runtime
