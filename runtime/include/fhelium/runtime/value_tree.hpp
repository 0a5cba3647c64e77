// A tree of backend values: the inputs and outputs of Programs and of
// GraphProgram schedules. A node is a ciphertext, a plaintext, a list or a
// map of named children (maps iterate in name order, so a tree's shape is
// deterministic).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "fhelium/engine.hpp"

namespace fhelium::runtime {

class ValueTree {
 public:
  using List = std::vector<ValueTree>;
  using Map = std::map<std::string, ValueTree>;

  ValueTree() : node_(List{}) {}
  ValueTree(Ciphertext c) : node_(std::move(c)) {}  // NOLINT: a leaf converts implicitly
  ValueTree(Plaintext p) : node_(std::move(p)) {}   // NOLINT
  ValueTree(List children) : node_(std::move(children)) {}  // NOLINT
  ValueTree(Map children) : node_(std::move(children)) {}   // NOLINT

  bool is_ciphertext() const { return std::holds_alternative<Ciphertext>(node_); }
  bool is_plaintext() const { return std::holds_alternative<Plaintext>(node_); }
  bool is_list() const { return std::holds_alternative<List>(node_); }
  bool is_map() const { return std::holds_alternative<Map>(node_); }

  // Accessors throw InvalidArgumentError naming the node kind when it differs.
  const Ciphertext& ciphertext() const;
  const Plaintext& plaintext() const;
  const List& list() const;
  const Map& map() const;
  Ciphertext& ciphertext();
  Plaintext& plaintext();
  List& list();
  Map& map();
  // Map child by name (InvalidArgumentError naming the missing key).
  const ValueTree& at(const std::string& name) const;
  const ValueTree& at(std::size_t index) const;

  // A leaf's value (ciphertext or plaintext); InvalidArgumentError otherwise.
  const Value& value() const;

  // Visits every leaf node in tree order, with its path ("x", "w[2]", "a.b"):
  // visit(const std::string& path, const ValueTree& leaf).
  template <class F>
  void for_each_leaf(F&& visit, const std::string& path = "") const;

  const char* kind() const;

 private:
  std::variant<Ciphertext, Plaintext, List, Map> node_;
};

std::string child_path(const std::string& parent, const std::string& name);
std::string child_path(const std::string& parent, std::size_t index);

template <class F>
void ValueTree::for_each_leaf(F&& visit, const std::string& path) const {
  if (auto* l = std::get_if<List>(&node_)) {
    for (std::size_t i = 0; i < l->size(); ++i) (*l)[i].for_each_leaf(visit, child_path(path, i));
  } else if (auto* m = std::get_if<Map>(&node_)) {
    for (const auto& [name, child] : *m) child.for_each_leaf(visit, child_path(path, name));
  } else {
    visit(path, *this);
  }
}

}  // namespace fhelium::runtime
