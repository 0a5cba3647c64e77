#include "fhelium/runtime/value_tree.hpp"

#include "fhelium/error.hpp"

namespace fhelium::runtime {
namespace {

template <class T>
T& get_as(std::variant<Ciphertext, Plaintext, ValueTree::List, ValueTree::Map>& node, const char* wanted,
          const char* actual) {
  if (auto* value = std::get_if<T>(&node)) return *value;
  throw InvalidArgumentError(std::string("value tree node is a ") + actual + ", expected a " + wanted);
}

}  // namespace

const char* ValueTree::kind() const {
  static constexpr const char* names[] = {"ciphertext", "plaintext", "list", "map"};
  return names[node_.index()];
}

Ciphertext& ValueTree::ciphertext() { return get_as<Ciphertext>(node_, "ciphertext", kind()); }
Plaintext& ValueTree::plaintext() { return get_as<Plaintext>(node_, "plaintext", kind()); }
ValueTree::List& ValueTree::list() { return get_as<List>(node_, "list", kind()); }
ValueTree::Map& ValueTree::map() { return get_as<Map>(node_, "map", kind()); }
const Ciphertext& ValueTree::ciphertext() const { return const_cast<ValueTree*>(this)->ciphertext(); }
const Plaintext& ValueTree::plaintext() const { return const_cast<ValueTree*>(this)->plaintext(); }
const ValueTree::List& ValueTree::list() const { return const_cast<ValueTree*>(this)->list(); }
const ValueTree::Map& ValueTree::map() const { return const_cast<ValueTree*>(this)->map(); }

const Value& ValueTree::value() const {
  if (auto* c = std::get_if<Ciphertext>(&node_)) return *c;
  if (auto* p = std::get_if<Plaintext>(&node_)) return *p;
  throw InvalidArgumentError(std::string("value tree node is a ") + kind() + ", expected a ciphertext or plaintext");
}

const ValueTree& ValueTree::at(const std::string& name) const {
  const Map& children = map();
  auto found = children.find(name);
  if (found == children.end()) throw InvalidArgumentError("value tree has no entry named '" + name + "'");
  return found->second;
}

const ValueTree& ValueTree::at(std::size_t index) const {
  const List& children = list();
  if (index >= children.size()) {
    throw InvalidArgumentError("value tree index " + std::to_string(index) + " is out of range (" +
                               std::to_string(children.size()) + " entries)");
  }
  return children[index];
}

std::string child_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

std::string child_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

}  // namespace fhelium::runtime
