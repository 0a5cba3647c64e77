#include "fhelium/runtime/value_tree.hpp"

#include <gtest/gtest.h>

#include "fhelium/error.hpp"

namespace fhelium::runtime {
namespace {

TEST(ValueTree, LeavesAreVisitedInPathOrder) {
  Ciphertext a;
  a.state.level = 3;
  Plaintext p;
  p.state.components = 1;
  ValueTree tree(ValueTree::Map{{"x", ValueTree(a)}, {"w", ValueTree(ValueTree::List{ValueTree(p), ValueTree(a)})}});
  std::vector<std::string> paths;
  tree.for_each_leaf([&](const std::string& path, const ValueTree& leaf) {
    paths.push_back(path + ":" + leaf.kind());
  });
  EXPECT_EQ(paths, (std::vector<std::string>{"w[0]:plaintext", "w[1]:ciphertext", "x:ciphertext"}));
  EXPECT_EQ(tree.at("x").ciphertext().state.level, 3);
  EXPECT_TRUE(tree.at("w").at(0).is_plaintext());
}

TEST(ValueTree, WrongKindAndMissingNamesAreNamed) {
  ValueTree tree(ValueTree::Map{});
  try {
    (void)tree.ciphertext();
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "value tree node is a map, expected a ciphertext");
  }
  EXPECT_THROW((void)tree.at("y"), InvalidArgumentError);
  EXPECT_THROW((void)ValueTree(ValueTree::List{}).at(std::size_t{0}), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::runtime
