// The text form of a Program: one declaration or operation per line.
//
//   program matvec
//   input x
//   constant d0 scale=1099511627776
//   %0 = rotate x step=1
//   t = multiply_plain %0 d0
//   h0, h1 = rotate_hoisted x steps=1,2
//   y = rescale t
//   output y = y
//
// Values are printed in definition order, so parsing gives back the same
// value ids. Scalars use the shortest text that reads back exactly. '#'
// starts a comment; blank lines are ignored.
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>

#include "fhelium/error.hpp"
#include "fhelium/runtime/program.hpp"
#include "program_internal.hpp"

namespace fhelium::runtime {

std::string Program::print() const {
  std::ostringstream out;
  out << "program " << name_ << "\n";
  std::size_t next_node = 0;
  for (std::size_t id = 0; id < values_.size(); ++id) {
    const ValueInfo& v = values_[id];
    if (v.kind == ValueKind::input) {
      out << "input " << v.name << "\n";
    } else if (v.kind == ValueKind::constant) {
      out << "constant " << v.name;
      if (v.constant_scale) out << " scale=" << detail::format_double(*v.constant_scale);
      out << "\n";
    } else if (next_node < nodes_.size() && static_cast<std::size_t>(nodes_[next_node].results[0]) == id) {
      const Node& node = nodes_[next_node++];
      std::string results;
      for (std::size_t i = 0; i < node.results.size(); ++i) {
        results += (i == 0 ? "" : ", ") + values_[static_cast<std::size_t>(node.results[i])].name;
      }
      // The text form separates arguments by spaces.
      const std::string operation = detail::operation_text(*this, node, " ");
      out << results << " = " << operation << "\n";
    }
  }
  for (const auto& [name, id] : outputs_)
    out << "output " << name << " = " << values_[static_cast<std::size_t>(id)].name << "\n";
  return out.str();
}

namespace {

class LineParser {
 public:
  explicit LineParser(int line) : line_(line) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InvalidArgumentError("line " + std::to_string(line_) + ": " + message);
  }

  double real(const std::string& token, const std::string& what) const {
    double value = 0;
    const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || result.ec != std::errc() || result.ptr != token.data() + token.size()) {
      fail("invalid number '" + token + "' for " + what);
    }
    return value;
  }

  template <class T>
  T integer(const std::string& token, const std::string& what) const {
    T value = 0;
    const char* begin = token.data();
    if (!token.empty() && token[0] == '+') ++begin;
    const auto result = std::from_chars(begin, token.data() + token.size(), value);
    if (token.empty() || result.ec != std::errc() || result.ptr != token.data() + token.size()) {
      fail("invalid integer '" + token + "' for " + what);
    }
    return value;
  }

  std::vector<long> integer_list(const std::string& token, const std::string& what) const {
    std::vector<long> values;
    std::size_t start = 0;
    while (true) {
      const auto comma = token.find(',', start);
      values.push_back(integer<long>(token.substr(start, comma - start), what));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return values;
  }

 private:
  int line_;
};

std::vector<std::string> split_whitespace(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string token; in >> token;) tokens.push_back(token);
  return tokens;
}

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

// The attributes each operation takes.
std::vector<std::string> attribute_names(OpKind op) {
  switch (op) {
    case OpKind::add_scalar:
    case OpKind::sub_scalar:
    case OpKind::multiply_integer:
      return {"value"};
    case OpKind::multiply_scalar:
      return {"value", "scale"};
    case OpKind::drop_to_level:
      return {"level"};
    case OpKind::rotate:
      return {"step"};
    case OpKind::rotate_hoisted:
    case OpKind::rotate_sum:
      return {"steps"};
    default:
      return {};
  }
}

bool is_keyword(const std::string& token) {
  return token == "program" || token == "input" || token == "constant" || token == "output";
}

}  // namespace

Program Program::parse(const std::string& text) {
  std::optional<ProgramBuilder> builder;
  std::map<std::string, ValueRef> names;                  // as written
  std::vector<std::pair<int, std::string>> result_names;  // value id -> name as written
  std::istringstream in(text);
  std::string raw;
  int line_number = 0;
  bool program_line_allowed = true;

  const auto define = [&](const std::string& name, ValueRef ref) { names[name] = ref; };
  const auto require_new = [&](const LineParser& p, const std::string& name) {
    if (!detail::valid_name(name)) p.fail("invalid name '" + name + "'");
    if (names.count(name) != 0) p.fail("duplicate name '" + name + "'");
  };
  const auto lookup = [&](const LineParser& p, const std::string& name) {
    const auto found = names.find(name);
    if (found == names.end()) p.fail("undefined value '" + name + "'");
    return found->second;
  };
  const auto start = [&](const std::string& name) {
    if (!builder) builder.emplace(name);
    program_line_allowed = false;
  };

  while (std::getline(in, raw)) {
    ++line_number;
    const LineParser p(line_number);
    const auto comment = raw.find('#');
    if (comment != std::string::npos) raw.erase(comment);
    const auto tokens = split_whitespace(raw);
    if (tokens.empty()) continue;
    try {
      if (is_keyword(tokens[0]) && (tokens.size() < 2 || tokens[1] != "=")) {
        const std::string& keyword = tokens[0];
        if (keyword == "program") {
          if (!program_line_allowed) p.fail("'program' must be the first line and appear once");
          if (tokens.size() != 2) p.fail("expected 'program NAME', got " + std::to_string(tokens.size()) + " tokens");
          start(tokens[1]);
        } else if (keyword == "input") {
          start("program");
          if (tokens.size() != 2) p.fail("expected 'input NAME', got " + std::to_string(tokens.size()) + " tokens");
          require_new(p, tokens[1]);
          define(tokens[1], builder->input(tokens[1]));
        } else if (keyword == "constant") {
          start("program");
          if (tokens.size() != 2 && tokens.size() != 3) {
            p.fail("expected 'constant NAME [scale=S]', got " + std::to_string(tokens.size()) + " tokens");
          }
          require_new(p, tokens[1]);
          std::optional<double> scale;
          if (tokens.size() == 3) {
            if (tokens[2].rfind("scale=", 0) != 0) p.fail("unknown constant attribute '" + tokens[2] + "'");
            scale = p.real(tokens[2].substr(6), "scale");
          }
          define(tokens[1], builder->constant(tokens[1], scale));
        } else {  // output
          start("program");
          if (tokens.size() != 4 || tokens[2] != "=") {
            p.fail("expected 'output NAME = VALUE', got '" + trim(raw) + "'");
          }
          builder->output(tokens[1], lookup(p, tokens[3]));
        }
        continue;
      }

      // RESULTS = OP ARGS... ATTR=VALUE...
      start("program");
      std::size_t eq = 0;
      while (eq < tokens.size() && tokens[eq] != "=") ++eq;
      if (eq == tokens.size())
        p.fail("expected 'RESULTS = OPERATION ARGUMENTS', got unknown keyword '" + tokens[0] + "'");
      if (eq == 0) p.fail("no result name before '='");
      if (eq + 1 == tokens.size()) p.fail("no operation after '='");
      std::string lhs;
      for (std::size_t i = 0; i < eq; ++i) lhs += tokens[i] + " ";
      std::vector<std::string> results;
      for (std::size_t from = 0;;) {
        const auto comma = lhs.find(',', from);
        const std::string name = trim(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
        if (name.empty()) p.fail("empty result name in '" + trim(lhs) + "'");
        require_new(p, name);
        for (const auto& r : results) {
          if (r == name) p.fail("duplicate name '" + name + "'");
        }
        results.push_back(name);
        if (comma == std::string::npos) break;
        from = comma + 1;
      }

      const std::string& op_name = tokens[eq + 1];
      OpKind op{};
      try {
        op = op_kind_from_string(op_name);
      } catch (const InvalidArgumentError& e) {
        p.fail(e.what());
      }
      std::vector<ValueRef> args;
      std::map<std::string, std::string> attributes;
      const auto allowed = attribute_names(op);
      for (std::size_t i = eq + 2; i < tokens.size(); ++i) {
        const auto at = tokens[i].find('=');
        if (at == std::string::npos) {
          args.push_back(lookup(p, tokens[i]));
          continue;
        }
        const std::string key = tokens[i].substr(0, at);
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
          p.fail(op_name + " has no attribute '" + key + "' (in '" + tokens[i] + "')");
        }
        if (attributes.count(key) != 0) p.fail("attribute '" + key + "' is given twice");
        attributes[key] = tokens[i].substr(at + 1);
      }
      for (const auto& key : allowed) {
        if (attributes.count(key) == 0) p.fail(op_name + " needs attribute '" + key + "='");
      }
      const int expected = detail::arity(op);
      if (expected >= 0 && args.size() != static_cast<std::size_t>(expected)) {
        p.fail(op_name + " expects " + std::to_string(expected) + " arguments, got " + std::to_string(args.size()));
      }
      if (args.empty()) p.fail(op_name + " expects at least one argument, got none");

      std::vector<ValueRef> refs;
      ProgramBuilder& b = *builder;
      switch (op) {
        case OpKind::add:
          refs = {b.add(args[0], args[1])};
          break;
        case OpKind::sub:
          refs = {b.sub(args[0], args[1])};
          break;
        case OpKind::negate:
          refs = {b.negate(args[0])};
          break;
        case OpKind::add_scalar:
          refs = {b.add_scalar(args[0], p.real(attributes["value"], "value"))};
          break;
        case OpKind::sub_scalar:
          refs = {b.sub_scalar(args[0], p.real(attributes["value"], "value"))};
          break;
        case OpKind::multiply:
          refs = {b.multiply(args[0], args[1])};
          break;
        case OpKind::relinearize:
          refs = {b.relinearize(args[0])};
          break;
        case OpKind::multiply_plain:
          refs = {b.multiply_plain(args[0], args[1])};
          break;
        case OpKind::multiply_scalar:
          refs = {
              b.multiply_scalar(args[0], p.real(attributes["value"], "value"), p.real(attributes["scale"], "scale"))};
          break;
        case OpKind::multiply_integer:
          refs = {b.multiply_integer(args[0], p.integer<std::int64_t>(attributes["value"], "value"))};
          break;
        case OpKind::rescale:
          refs = {b.rescale(args[0])};
          break;
        case OpKind::drop_to_level:
          refs = {b.drop_to_level(args[0], p.integer<int>(attributes["level"], "level"))};
          break;
        case OpKind::rotate:
          refs = {b.rotate(args[0], p.integer<long>(attributes["step"], "step"))};
          break;
        case OpKind::conjugate:
          refs = {b.conjugate(args[0])};
          break;
        case OpKind::rotate_hoisted:
          refs = b.rotate_hoisted(args[0], p.integer_list(attributes["steps"], "steps"));
          break;
        case OpKind::to_ntt:
          refs = {b.to_ntt(args[0])};
          break;
        case OpKind::to_coefficient:
          refs = {b.to_coefficient(args[0])};
          break;
        case OpKind::sum:
          refs = {b.sum(args)};
          break;
        case OpKind::rotate_sum:
          refs = {b.rotate_sum(args, p.integer_list(attributes["steps"], "steps"))};
          break;
        case OpKind::multiply_plain_sum: {
          std::vector<ValueRef> values, constants;
          for (std::size_t i = 0; i < args.size(); ++i) (i % 2 == 0 ? values : constants).push_back(args[i]);
          refs = {b.multiply_plain_sum(values, constants)};
          break;
        }
        case OpKind::multiply_relinearize_rescale:
          refs = {b.multiply_relinearize_rescale(args[0], args[1])};
          break;
        case OpKind::mod_raise:
          refs = {b.mod_raise(args[0])};
          break;
        case OpKind::mod_raise_encapsulated:
          refs = {b.mod_raise_encapsulated(args[0])};
          break;
      }
      if (refs.size() != results.size()) {
        p.fail(op_name + " defines " + std::to_string(refs.size()) + " results, got " + std::to_string(results.size()) +
               " names");
      }
      for (std::size_t i = 0; i < refs.size(); ++i) {
        define(results[i], refs[i]);
        result_names.emplace_back(refs[i].id, results[i]);
      }
    } catch (const InvalidArgumentError& e) {
      const std::string message = e.what();
      if (message.rfind("line ", 0) == 0) throw;
      detail::rethrow_with_prefix("line " + std::to_string(line_number) + ": ");
    }
  }
  if (!builder) throw InvalidArgumentError("program text is empty, expected 'program NAME' and declarations");
  Program program = builder->build();
  // The builder generated the result names; the text's names replace them
  // (unique: the parser refused duplicates).
  for (const auto& [id, name] : result_names) program.values_[static_cast<std::size_t>(id)].name = name;
  return program;
}

}  // namespace fhelium::runtime
