// link() and Executable::run(): a prepared program bound to an Engine, its
// keys and its encoded constants, interpreted node by node; a
// multiply_scalar read only by a later sum runs inside that sum, and
// consecutive multiply_plain_sums run as one call.
#include <algorithm>

#include "fhelium/encoder.hpp"
#include "fhelium/error.hpp"
#include "fhelium/runtime/program.hpp"
#include "program_internal.hpp"

namespace fhelium::runtime {

namespace detail {

namespace {

// The same residues as a value of `to`: a level-0 ciphertext moves between
// contexts with the same q_0 on the same backend.
Ciphertext rebound(const Ciphertext& c, const Context& to) {
  Ciphertext out = c;
  out.state.context_id = to.id();
  return out;
}

}  // namespace

std::vector<Ciphertext> execute_node(const Engine& engine, const Node& node, const std::vector<Operand>& args,
                                     const RelinKey& relinearization_key, const GaloisKeys& galois_keys,
                                     const SparseEncapsulation* encapsulation) {
  const auto ct = [&](std::size_t i) -> const Ciphertext& { return *args[i].ciphertext; };
  switch (node.op) {
    case OpKind::add:
      return {args[1].plaintext ? engine.add(ct(0), *args[1].plaintext) : engine.add(ct(0), ct(1))};
    case OpKind::sub:
      return {args[1].plaintext ? engine.sub(ct(0), *args[1].plaintext) : engine.sub(ct(0), ct(1))};
    case OpKind::negate:
      return {engine.negate(ct(0))};
    case OpKind::add_scalar:
      return {engine.add_scalar(ct(0), node.scalar)};
    case OpKind::sub_scalar:
      return {engine.sub_scalar(ct(0), node.scalar)};
    case OpKind::multiply:
      return {engine.multiply(ct(0), ct(1))};
    case OpKind::relinearize:
      return {engine.relinearize(ct(0), relinearization_key)};
    case OpKind::multiply_plain:
      return {engine.multiply_plain(ct(0), *args[1].plaintext)};
    case OpKind::multiply_scalar:
      return {engine.multiply_scalar(ct(0), node.scalar, node.scalar_scale)};
    case OpKind::multiply_integer:
      return {engine.multiply_integer(ct(0), node.integer)};
    case OpKind::rescale:
      return {engine.rescale(ct(0))};
    case OpKind::drop_to_level:
      return {engine.drop_to_level(ct(0), node.level)};
    case OpKind::rotate:
      return {engine.rotate(ct(0), node.step, galois_keys)};
    case OpKind::conjugate:
      return {engine.conjugate(ct(0), galois_keys)};
    case OpKind::rotate_hoisted:
      return engine.rotate_hoisted(ct(0), node.steps, galois_keys);
    case OpKind::to_ntt:
      return {engine.to_ntt(ct(0))};
    case OpKind::to_coefficient:
      return {engine.to_coefficient(ct(0))};
    case OpKind::sum: {
      std::vector<Ciphertext> batch;
      batch.reserve(args.size());
      for (std::size_t i = 0; i < args.size(); ++i) batch.push_back(ct(i));
      return {engine.sum(batch)};
    }
    case OpKind::rotate_sum: {
      std::vector<Ciphertext> terms;
      for (std::size_t i = 0; i < args.size(); ++i) terms.push_back(ct(i));
      return {engine.rotate_sum(terms, node.steps, galois_keys)};
    }
    case OpKind::multiply_plain_sum: {
      std::vector<Ciphertext> values;
      std::vector<Plaintext> constants;
      for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
        values.push_back(ct(i));
        constants.push_back(*args[i + 1].plaintext);
      }
      return {engine.multiply_plain_sum(values, constants)};
    }
    case OpKind::multiply_relinearize_rescale:
      return {engine.multiply_relinearize_rescale(ct(0), ct(1), relinearization_key)};
    case OpKind::mod_raise:
      return {engine.mod_raise(ct(0))};
    case OpKind::mod_raise_encapsulated: {
      if (encapsulation == nullptr) return {engine.mod_raise(ct(0))};
      const Engine& low = *encapsulation->low_engine;
      const Ciphertext sparse = low.key_switch(rebound(ct(0), low.context()), encapsulation->dense_to_sparse);
      return {engine.key_switch(engine.mod_raise(rebound(sparse, engine.context())), encapsulation->sparse_to_dense)};
    }
  }
  throw InvalidArgumentError(std::string("unknown operation ") + std::to_string(static_cast<int>(node.op)));
}

}  // namespace detail

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Steps rotate_hoisted and rotate_sum use: these need their exact key (no composition).
std::set<long> hoisted_steps(const Program& program, long slots) {
  std::set<long> steps;
  for (const Node& node : program.nodes()) {
    if (node.op != OpKind::rotate_hoisted && node.op != OpKind::rotate_sum) continue;
    for (long step : node.steps) {
      if (step % slots != 0) steps.insert(step);
    }
  }
  return steps;
}

// A multiply_scalar whose result only one sum reads, once, and is not an
// output runs inside that sum as one Engine::multiply_scalar_sum (a
// polynomial's leaves: one pass over the terms instead of a product each,
// then the sum; the same residues).
struct ScalarSumFusion {
  std::vector<int> producer;    // per value: the node that defines it, or -1
  std::vector<int> fused_into;  // per node: the sum it runs inside, or -1
};

ScalarSumFusion fuse_scalar_products_into_sums(const Program& program) {
  const auto& nodes = program.nodes();
  std::vector<int> reads(program.values().size(), 0);
  for (const Node& node : nodes) {
    for (int a : node.args) ++reads[static_cast<std::size_t>(a)];
  }
  for (const auto& [name, id] : program.outputs()) ++reads[static_cast<std::size_t>(id)];
  ScalarSumFusion f{std::vector<int>(program.values().size(), -1), std::vector<int>(nodes.size(), -1)};
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& node = nodes[k];
    if (node.op == OpKind::sum) {
      for (int a : node.args) {
        const int m = f.producer[static_cast<std::size_t>(a)];
        if (m >= 0 && nodes[static_cast<std::size_t>(m)].op == OpKind::multiply_scalar &&
            reads[static_cast<std::size_t>(a)] == 1) {
          f.fused_into[static_cast<std::size_t>(m)] = static_cast<int>(k);
        }
      }
    }
    for (int r : node.results) f.producer[static_cast<std::size_t>(r)] = static_cast<int>(k);
  }
  return f;
}

// A sum with fused products: each of those contributes its operand, value
// and scalar scale, every other term itself times 1.
Ciphertext run_fused_sum(const Engine& engine, const std::vector<Node>& nodes, std::size_t k,
                         const ScalarSumFusion& fusion, const std::vector<std::optional<Ciphertext>>& live) {
  std::vector<Ciphertext> terms;
  std::vector<double> values, scalar_scales;
  for (int a : nodes[k].args) {
    const int m = fusion.producer[static_cast<std::size_t>(a)];
    if (m >= 0 && fusion.fused_into[static_cast<std::size_t>(m)] == static_cast<int>(k)) {
      const Node& product = nodes[static_cast<std::size_t>(m)];
      terms.push_back(*live[static_cast<std::size_t>(product.args[0])]);
      values.push_back(product.scalar);
      scalar_scales.push_back(product.scalar_scale);
    } else {
      terms.push_back(*live[static_cast<std::size_t>(a)]);
      values.push_back(1.0);
      scalar_scales.push_back(1.0);
    }
  }
  return engine.multiply_scalar_sum(terms, values, scalar_scales);
}

// Consecutive multiply_plain_sums of one level and component count, none
// reading another's result, run as one Engine::multiply_plain_sums (a
// linear transform's giant groups: each baby rotation read once for all of
// them; the same residues). Per node: the length of the run it starts, 0
// inside one.
std::vector<std::size_t> plain_sum_runs(const PreparedProgram& prepared) {
  const auto& nodes = prepared.program().nodes();
  std::vector<std::size_t> runs(nodes.size(), 1);
  const auto joins = [&](std::size_t first, std::size_t k) {
    const Node& node = nodes[k];
    if (node.op != OpKind::multiply_plain_sum) return false;
    const ValueState& s = prepared.state(node.results[0]);
    const ValueState& head = prepared.state(nodes[first].results[0]);
    if (s.level != head.level || s.components != head.components) return false;
    for (std::size_t j = first; j < k; ++j) {
      for (int a : node.args) {
        if (a == nodes[j].results[0]) return false;
      }
    }
    return true;
  };
  for (std::size_t first = 0; first < nodes.size();) {
    std::size_t end = first + 1;
    if (nodes[first].op == OpKind::multiply_plain_sum) {
      while (end < nodes.size() && joins(first, end)) runs[end++] = 0;
    }
    runs[first] = end - first;
    first = end;
  }
  return runs;
}

std::vector<Ciphertext> run_plain_sums(const Engine& engine, const std::vector<Node>& nodes, std::size_t first,
                                       std::size_t count, const std::vector<std::optional<Ciphertext>>& live,
                                       const std::map<int, Plaintext>& constants) {
  std::vector<std::vector<Ciphertext>> values(count);
  std::vector<std::vector<Plaintext>> plains(count);
  for (std::size_t g = 0; g < count; ++g) {
    const std::vector<int>& args = nodes[first + g].args;
    for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
      values[g].push_back(*live[static_cast<std::size_t>(args[i])]);
      plains[g].push_back(constants.at(args[i + 1]));
    }
  }
  const std::vector<std::span<const Ciphertext>> a(values.begin(), values.end());
  const std::vector<std::span<const Plaintext>> p(plains.begin(), plains.end());
  return engine.multiply_plain_sums(a, p);
}

void check_keys(const PreparedProgram& prepared, const Engine& engine, const Materials& materials) {
  const Context& context = engine.context();
  const KeyRequirements needed = prepared.required_keys();
  const long slots = static_cast<long>(context.ring_degree() / 2);
  const std::set<long> exact_only = hoisted_steps(prepared.program(), slots);
  std::vector<std::string> missing;

  if (needed.relinearization) {
    const RelinKey* key = materials.relinearization_key;
    if (key == nullptr || !key->buffer) {
      missing.push_back("relinearization key");
    } else if (key->context_id != context.id()) {
      throw StateError("link " + prepared.program().name() + ": the relinearization key belongs to context " +
                       std::to_string(key->context_id) + ", expected context " + std::to_string(context.id()));
    }
  }
  const GaloisKeys* galois = materials.galois_keys;
  if (galois != nullptr && galois->context_id != context.id() && !galois->keys.empty()) {
    throw StateError("link " + prepared.program().name() + ": the Galois keys belong to context " +
                     std::to_string(galois->context_id) + ", expected context " + std::to_string(context.id()));
  }
  for (long step : needed.rotation_steps) {
    const std::uint32_t element = context.galois_element(step);
    bool present = galois != nullptr && galois->contains(element);
    if (!present && galois != nullptr && exact_only.count(step) == 0) {
      try {
        engine.rotation_plan(step, *galois);  // composed from power-of-two keys
        present = true;
      } catch (const MissingKeyError&) {
      }
    }
    if (!present) {
      missing.push_back("rotation step " + std::to_string(step) + " (Galois element " + std::to_string(element) +
                        (exact_only.count(step) != 0 ? ", needed exactly by rotate_hoisted or rotate_sum" : "") + ")");
    }
  }
  if (needed.sparse_encapsulation) {
    const SparseEncapsulation* e = materials.sparse_encapsulation;
    if (e == nullptr || !e->low_engine || !e->dense_to_sparse.buffer || !e->sparse_to_dense.buffer) {
      missing.push_back("sparse-secret encapsulation keys (dense to sparse and back)");
    } else if (e->sparse_to_dense.context_id != context.id() ||
               e->low_engine->context().q().front().value != context.level_modulus(0, 0).value) {
      throw StateError("link " + prepared.program().name() +
                       ": the sparse-secret encapsulation keys belong to another context (context " +
                       std::to_string(e->sparse_to_dense.context_id) + "), expected context " +
                       std::to_string(context.id()));
    }
  }
  if (needed.conjugation && (galois == nullptr || !galois->contains(context.conjugation_element()))) {
    missing.push_back("conjugation key (Galois element " + std::to_string(context.conjugation_element()) + ")");
  }
  if (!missing.empty()) {
    throw MissingKeyError("link " + prepared.program().name() + ": missing keys: " + join(missing, "; "));
  }
}

}  // namespace

Executable link(const PreparedProgram& prepared, const Engine& engine, const Materials& materials) {
  const Program& program = prepared.program();
  const std::string where = "link " + program.name() + ": ";
  if (!prepared.context() || engine.context().id() != prepared.context()->id()) {
    throw StateError(where + "the engine's context " + std::to_string(engine.context().id()) +
                     " is not the context the program was prepared for");
  }
  check_keys(prepared, engine, materials);
  if (!engine.backend().supports_rotate_sum()) {
    for (const Node& node : program.nodes()) {
      if (node.op != OpKind::rotate_sum) continue;
      throw BackendError(where + "node '" + program.values()[static_cast<std::size_t>(node.results[0])].name +
                         " = rotate_sum' needs a backend with rotate_sum; backend '" + engine.backend().name() +
                         "' has none (supports_rotate_sum() is false): build the circuit with separate rotations");
    }
  }

  // Constants: every declared one bound, no others.
  const auto declared = program.constant_names();
  std::vector<std::string> unbound;
  for (const auto& name : declared) {
    if (materials.constants.count(name) == 0) unbound.push_back(name);
  }
  if (!unbound.empty()) {
    throw InvalidArgumentError(where + "unbound constants: " + join(unbound, ", "));
  }
  std::vector<std::string> unknown;
  for (const auto& [name, value] : materials.constants) {
    if (std::find(declared.begin(), declared.end(), name) == declared.end()) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    throw InvalidArgumentError(where + "unknown constants: " + join(unknown, ", ") + " (the program declares " +
                               (declared.empty() ? std::string("none") : join(declared, ", ")) + ")");
  }

  Executable exe;
  exe.prepared_ = prepared;
  exe.engine_ = &engine;
  exe.relinearization_key_ = materials.relinearization_key;
  exe.galois_keys_ = materials.galois_keys;
  exe.sparse_encapsulation_ = materials.sparse_encapsulation;
  std::optional<Encoder> encoder;
  const auto& values = program.values();
  for (std::size_t id = 0; id < values.size(); ++id) {
    if (values[id].kind != ValueKind::constant) continue;
    const std::string& name = values[id].name;
    const ValueState& expected = prepared.state(static_cast<int>(id));
    const auto& bound = materials.constants.at(name);
    if (const auto* plaintext = std::get_if<Plaintext>(&bound)) {
      const std::string difference = detail::state_difference(plaintext->state, expected);
      if (!difference.empty()) throw StateError(where + "constant " + name + ": " + difference);
      if (!plaintext->buffer) throw InvalidArgumentError(where + "constant " + name + " has no storage");
      exe.constants_[static_cast<int>(id)] = *plaintext;
    } else {
      const auto& clear = std::get<std::vector<std::complex<double>>>(bound);
      if (!encoder) encoder.emplace(prepared.context());
      try {
        exe.constants_[static_cast<int>(id)] =
            engine.upload_plaintext(encoder->encode(clear, expected.level, expected.scale, expected.domain));
      } catch (const Error&) {
        detail::rethrow_with_prefix(where + "constant " + name + ": ");
      }
    }
  }
  return exe;
}

ValueTree Executable::run(const ValueTree& inputs) const { return run(inputs, nullptr); }

ValueTree Executable::run(const ValueTree& inputs, const NodeObserver& observer) const {
  const Program& program = prepared_.program();
  const std::string where = "run " + program.name() + ": ";
  if (!inputs.is_map()) {
    throw InvalidArgumentError(where + "inputs are a " + std::string(inputs.kind()) +
                               ", expected a map with one ciphertext per input");
  }
  const auto& given = inputs.map();
  const auto& values = program.values();
  const auto names = program.input_names();
  for (const auto& [name, tree] : given) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw InvalidArgumentError(where + "'" + name + "' is not an input (inputs: " + join(names, ", ") + ")");
    }
  }

  // Every input is checked before any work.
  std::vector<std::optional<Ciphertext>> live(values.size());
  for (std::size_t id = 0; id < values.size(); ++id) {
    if (values[id].kind != ValueKind::input) continue;
    const std::string& name = values[id].name;
    const auto found = given.find(name);
    if (found == given.end()) throw InvalidArgumentError(where + "missing input '" + name + "'");
    if (!found->second.is_ciphertext()) {
      throw InvalidArgumentError(where + "input " + name + " is a " + found->second.kind() + ", expected a ciphertext");
    }
    const Ciphertext& ct = found->second.ciphertext();
    const std::string difference = detail::state_difference(ct.state, prepared_.state(static_cast<int>(id)));
    if (!difference.empty()) throw StateError(where + "input " + name + ": " + difference);
    live[id] = ct;
  }

  // Each value is released after its last use (outputs are kept).
  const auto& nodes = program.nodes();
  constexpr std::size_t kept = static_cast<std::size_t>(-1);
  std::vector<std::size_t> last_use(values.size(), 0);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    for (int r : nodes[k].results) last_use[static_cast<std::size_t>(r)] = k;
    for (int a : nodes[k].args) last_use[static_cast<std::size_t>(a)] = k;
  }
  for (const auto& [name, id] : program.outputs()) last_use[static_cast<std::size_t>(id)] = kept;
  const std::vector<std::size_t> runs = plain_sum_runs(prepared_);
  const ScalarSumFusion fusion = fuse_scalar_products_into_sums(program);
  const std::vector<int>& fused_into = fusion.fused_into;
  std::vector<std::vector<std::size_t>> fused_operands(nodes.size());  // per sum: its products' operands
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    if (fused_into[k] < 0) continue;
    const auto sum = static_cast<std::size_t>(fused_into[k]);
    const auto operand = static_cast<std::size_t>(nodes[k].args[0]);  // read at the sum instead
    fused_operands[sum].push_back(operand);
    last_use[operand] = std::max(last_use[operand], sum);
  }

  static const RelinKey no_relinearization_key{};
  static const GaloisKeys no_galois_keys{};
  const RelinKey& relinearization_key = relinearization_key_ ? *relinearization_key_ : no_relinearization_key;
  const GaloisKeys& galois_keys = galois_keys_ ? *galois_keys_ : no_galois_keys;

  std::vector<detail::Operand> operands;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Node& node = nodes[k];
    if (fused_into[k] >= 0) {  // runs inside its sum
      if (observer) observer(k);
      continue;
    }
    const std::size_t last = k + runs[k] - 1;  // the nodes [k, last] run as one call
    std::vector<Ciphertext> results;
    try {
      if (runs[k] > 1) {
        results = run_plain_sums(*engine_, nodes, k, runs[k], live, constants_);
      } else if (!fused_operands[k].empty()) {
        results = {run_fused_sum(*engine_, nodes, k, fusion, live)};
      } else {
        operands.clear();
        for (int arg : node.args) {
          const auto a = static_cast<std::size_t>(arg);
          if (values[a].kind == ValueKind::constant) {
            operands.push_back({nullptr, &constants_.at(arg)});
          } else {
            operands.push_back({&*live[a], nullptr});
          }
        }
        results =
            detail::execute_node(*engine_, node, operands, relinearization_key, galois_keys, sparse_encapsulation_);
      }
    } catch (const Error&) {
      const std::string batch =
          runs[k] > 1 ? " (with the " + std::to_string(runs[k] - 1) + " multiply_plain_sums after it)" : "";
      detail::rethrow_with_prefix(where + detail::node_label(program, node) + batch + ": ");
    }
    std::vector<int> result_ids;  // the call's results are its nodes' results, in order
    for (std::size_t j = k; j <= last; ++j)
      result_ids.insert(result_ids.end(), nodes[j].results.begin(), nodes[j].results.end());
    for (std::size_t i = 0; i < results.size(); ++i)
      live[static_cast<std::size_t>(result_ids[i])] = std::move(results[i]);
    for (std::size_t j = k; j <= last; ++j) {
      for (int v : nodes[j].args) {
        if (last_use[static_cast<std::size_t>(v)] <= last) live[static_cast<std::size_t>(v)].reset();
      }
      for (int v : nodes[j].results) {
        if (last_use[static_cast<std::size_t>(v)] == j) live[static_cast<std::size_t>(v)].reset();  // never used
      }
      for (std::size_t v : fused_operands[j]) {
        if (last_use[v] <= last) live[v].reset();
      }
      if (observer) observer(j);
    }
    k = last;
  }

  ValueTree::Map outputs;
  for (const auto& [name, id] : program.outputs()) outputs.emplace(name, *live[static_cast<std::size_t>(id)]);
  return ValueTree(std::move(outputs));
}

}  // namespace fhelium::runtime
