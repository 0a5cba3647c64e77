// Helpers shared by the Program sources (builder, text form, prepare, link
// and run). Not installed.
#pragma once

#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::runtime::detail {

// A name usable as one token of the text form.
bool valid_name(const std::string& name);

// Shortest text that reads back as the same double (std::to_chars).
std::string format_double(double value);

// Arguments an operation takes; -1 for any number (sum, at least one).
int arity(OpKind op);

// "op a<sep>b attr=v": an operation with its arguments and attributes.
std::string operation_text(const Program& program, const Node& node, const char* separator);
// "op a, b attr=v": the right-hand side of the text form, with ", " between arguments.
std::string describe_operation(const Program& program, const Node& node);
// "y (add x, t)": the results' names and the operation, the prefix of errors.
std::string node_label(const Program& program, const Node& node);

// Rethrows the exception in flight as the same fhelium error type with
// `prefix` before its message. Call only inside a catch block.
[[noreturn]] void rethrow_with_prefix(const std::string& prefix);

// The fields in which `actual` differs from `expected` ("level is 2, expected
// 3; scale is 2^40, expected 2^80"); empty when they agree (scales to the
// Engine's relative tolerance).
std::string state_difference(const ValueState& actual, const ValueState& expected);

// The keys the nodes of `program` use.
KeyRequirements key_requirements(const Program& program, const Context& context);

// One argument of a node: a ciphertext, or (for constants) a plaintext.
struct Operand {
  const Ciphertext* ciphertext = nullptr;
  const Plaintext* plaintext = nullptr;
};

// Runs one node on the Engine; one ciphertext per result. Without an
// encapsulation (the state tracker's state-only engine), mod_raise_encapsulated
// runs as mod_raise: the same state.
std::vector<Ciphertext> execute_node(const Engine& engine, const Node& node, const std::vector<Operand>& args,
                                     const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
                                     const SparseEncapsulation* encapsulation = nullptr);

}  // namespace fhelium::runtime::detail
