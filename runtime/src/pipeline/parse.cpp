// Reading a pipeline file: YAML -> PipelineSpec, with the file, line, column
// and key of every refusal.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fhelium/runtime/pipeline.hpp"
#include "pipeline_internal.hpp"

namespace fhelium::runtime {

std::string SourceMark::describe() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

namespace {

std::string compose(const SourceMark& mark, const std::string& key, const std::string& reason) {
  std::string s = mark.describe() + ": ";
  if (!key.empty()) s += "key '" + key + "': ";
  return s + reason;
}

}  // namespace

PipelineError::PipelineError(SourceMark mark, std::string key, std::string reason)
    : InvalidArgumentError(compose(mark, key, reason)),
      mark_(std::move(mark)),
      key_(std::move(key)),
      reason_(std::move(reason)) {}

std::string to_string(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::eager:
      return "eager";
    case ExecutionMode::program:
      return "program";
    case ExecutionMode::graph:
      return "graph";
  }
  return "?";
}

namespace pipeline_detail {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string known_list(const std::vector<std::string>& known, const std::string& got) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(got, k);
    if (d < best_distance && d < got.size() && d < k.size()) {
      best_distance = d;
      best = k;
    }
  }
  return best.empty() ? "(known: " + list + ")" : "(did you mean '" + best + "'? known: " + list + ")";
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::size_t next_power_of_two(std::size_t n) {
  std::size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace pipeline_detail

namespace {

using namespace pipeline_detail;

// The file being read and the command-line overrides applied to it.
struct Document {
  std::string file;
  std::vector<std::pair<std::string, std::string>> overrides;  // path, "KEY=VALUE"
};

// A YAML node with its key path, for messages.
class Y {
 public:
  Y(YAML::Node node, std::string path, const Document* doc)
      : node_(std::move(node)), path_(std::move(path)), doc_(doc) {}

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

  SourceMark mark() const { return mark_at(node_.Mark(), path_); }
  SourceMark mark_at(const YAML::Mark& m, const std::string& path) const {
    for (const auto& [override_path, text] : doc_->overrides) {
      if (path == override_path || path.rfind(override_path + ".", 0) == 0 || path.rfind(override_path + "[", 0) == 0) {
        return {"--set " + text, 0, 0};
      }
    }
    if (m.is_null()) return {doc_->file, 0, 0};
    return {doc_->file, m.line + 1, m.column + 1};
  }

  [[noreturn]] void fail(const std::string& reason) const { throw PipelineError(mark(), path_, reason); }

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  std::string child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // A map's entries in document order; refuses duplicates and non-scalar keys.
  std::vector<std::pair<std::string, Y>> entries() const {
    if (!node_.IsMap()) fail("expected a map of keys, got " + kind());
    std::vector<std::pair<std::string, Y>> out;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) {
        throw PipelineError(mark_at(it->first.Mark(), path_), path_, "map keys must be plain names");
      }
      const std::string key = it->first.Scalar();
      for (const auto& [k, v] : out) {
        if (k == key) throw PipelineError(mark_at(it->first.Mark(), child_path(key)), child_path(key), "duplicate key");
      }
      out.emplace_back(key, Y(it->second, child_path(key), doc_));
    }
    return out;
  }

  // Refuses keys outside `known`, pointing at the key.
  void only(const std::vector<std::string>& known, const std::string& what = "") const {
    if (!node_.IsMap()) fail("expected a map of keys, got " + kind());
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        throw PipelineError(
            mark_at(it->first.Mark(), child_path(key)), child_path(key),
            "unknown key" + (what.empty() ? std::string() : " for " + what) + " " + known_list(known, key));
      }
    }
  }

  bool has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }

  std::optional<Y> get(const std::string& key) const {
    if (!node_.IsMap()) fail("expected a map of keys, got " + kind());
    YAML::Node child = node_[key];
    if (!child.IsDefined()) return std::nullopt;
    return Y(child, child_path(key), doc_);
  }

  Y require(const std::string& key, const std::string& hint = "") const {
    auto child = get(key);
    if (!child) {
      throw PipelineError(mark(), child_path(key), "missing required key" + (hint.empty() ? "" : ": " + hint));
    }
    return *child;
  }

  std::vector<Y> items() const {
    if (!node_.IsSequence()) fail("expected a list, got " + kind());
    std::vector<Y> out;
    std::size_t i = 0;
    for (auto it = node_.begin(); it != node_.end(); ++it, ++i) {
      out.emplace_back(*it, path_ + "[" + std::to_string(i) + "]", doc_);
    }
    return out;
  }

  std::string kind() const {
    if (node_.IsMap()) return "a map";
    if (node_.IsSequence()) return "a list";
    if (node_.IsNull()) return "nothing (null)";
    return "'" + node_.Scalar() + "'";
  }

  std::string str() const {
    if (!node_.IsScalar()) fail("expected a text value, got " + kind());
    return node_.Scalar();
  }

  std::string name(const std::string& what) const {
    const std::string s = str();
    if (!is_identifier(s) || s.rfind("__", 0) == 0) {
      fail("'" + s + "' is not a valid " + what +
           " name: use letters, digits and '_', starting with a letter (not '__')");
    }
    return s;
  }

  double number() const {
    if (!node_.IsScalar()) fail("expected a number, got " + kind());
    const std::string& s = node_.Scalar();
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
      fail("expected a finite number, got '" + s + "'");
    }
    return v;
  }

  std::int64_t integer() const {
    if (!node_.IsScalar()) fail("expected an integer, got " + kind());
    const std::string& s = node_.Scalar();
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) fail("expected an integer, got '" + s + "'");
    return v;
  }

  int integer_in(std::int64_t lo, std::int64_t hi) const {
    const std::int64_t v = integer();
    if (v < lo || v > hi) {
      fail("expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(v));
    }
    return static_cast<int>(v);
  }

  bool boolean() const {
    const std::string s = str();
    if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "no" || s == "off") return false;
    fail("expected true or false, got '" + s + "'");
  }

  std::vector<double> numbers() const {
    std::vector<double> out;
    for (const Y& item : items()) out.push_back(item.number());
    return out;
  }

  std::vector<std::vector<double>> matrix() const {
    std::vector<std::vector<double>> rows;
    for (const Y& row : items()) {
      rows.push_back(row.numbers());
      if (rows.back().empty()) row.fail("a matrix row is empty");
      if (rows.back().size() != rows.front().size()) {
        row.fail("matrix rows differ in length: row 0 has " + std::to_string(rows.front().size()) +
                 " values, this row " + std::to_string(rows.back().size()));
      }
    }
    if (rows.empty()) fail("the matrix is empty");
    return rows;
  }

 private:
  YAML::Node node_;
  std::string path_;
  const Document* doc_;
};

// ---- command-line overrides ----

struct PathSegment {
  std::string key;  // map key (empty when the segment is an index)
  std::optional<std::size_t> index;
};

std::vector<PathSegment> split_path(const std::string& path, const std::string& text) {
  std::vector<PathSegment> out;
  std::size_t i = 0;
  const auto bad = [&] {
    throw PipelineError({"--set " + text, 0, 0}, path,
                        "expected KEY=VALUE with KEY like execution.mode or steps[2].step");
  };
  while (i < path.size()) {
    std::size_t j = i;
    while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
    if (j > i) out.push_back({path.substr(i, j - i), std::nullopt});
    while (j < path.size() && path[j] == '[') {
      const std::size_t close = path.find(']', j);
      if (close == std::string::npos || close == j + 1) bad();
      const std::string digits = path.substr(j + 1, close - j - 1);
      if (!std::all_of(digits.begin(), digits.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        bad();
      out.push_back({"", static_cast<std::size_t>(std::stoull(digits))});
      j = close + 1;
    }
    if (j < path.size()) {
      if (path[j] != '.') bad();
      ++j;
    }
    if (j == i) bad();
    i = j;
  }
  if (out.empty()) bad();
  return out;
}

// Applies KEY=VALUE to the document; returns the canonical path it set.
std::string apply_override(YAML::Node& root, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw PipelineError({"--set " + text, 0, 0}, "", "expected KEY=VALUE, for example execution.mode=graph");
  }
  const std::string path = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw PipelineError({"--set " + text, 0, 0}, path, "the value is not valid YAML: " + e.msg);
  }
  const auto segments = split_path(path, text);
  YAML::Node current = root;
  std::string canonical;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const PathSegment& seg = segments[s];
    const bool last = s + 1 == segments.size();
    YAML::Node next;
    if (seg.index) {
      if (!current.IsSequence() || *seg.index >= current.size()) {
        throw PipelineError({"--set " + text, 0, 0}, canonical,
                            "has no element [" + std::to_string(*seg.index) + "] (it has " +
                                std::to_string(current.IsSequence() ? current.size() : 0) + ")");
      }
      canonical += "[" + std::to_string(*seg.index) + "]";
      if (last) {
        current[*seg.index] = value;
        return canonical;
      }
      next.reset(current[*seg.index]);
    } else if (current.IsSequence()) {
      // steps.NAME: the element whose `name` is NAME
      std::optional<std::size_t> found;
      for (std::size_t k = 0; k < current.size(); ++k) {
        if (current[k].IsMap() && current[k]["name"].IsDefined() && current[k]["name"].IsScalar() &&
            current[k]["name"].Scalar() == seg.key) {
          found = k;
        }
      }
      if (!found) {
        throw PipelineError({"--set " + text, 0, 0}, canonical, "has no element named '" + seg.key + "'");
      }
      canonical += "[" + std::to_string(*found) + "]";
      if (last) {
        current[*found] = value;
        return canonical;
      }
      next.reset(current[*found]);
    } else {
      if (!current.IsMap() && !current.IsNull()) {
        throw PipelineError({"--set " + text, 0, 0}, canonical, "is not a map, cannot set '" + seg.key + "' in it");
      }
      canonical += (canonical.empty() ? "" : ".") + seg.key;
      if (last) {
        current[seg.key] = value;
        return canonical;
      }
      if (!current[seg.key].IsDefined() || current[seg.key].IsNull())
        current[seg.key] = YAML::Node(YAML::NodeType::Map);
      next.reset(current[seg.key]);
    }
    current.reset(next);
  }
  return canonical;
}

// ---- deterministic random inputs (splitmix64; the same values everywhere) ----

struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

// ---- files ----

std::vector<std::vector<double>> read_csv(const std::string& path, const Y& at) {
  std::ifstream in(path);
  if (!in) at.fail("cannot read input file '" + path + "'");
  std::vector<std::vector<double>> rows;
  std::string line;
  int line_number = 0;
  bool first_content = true;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<double> row;
    bool header = false;
    std::string cell;
    std::stringstream cells(line);
    const char separator =
        line.find(',') != std::string::npos ? ',' : (line.find(';') != std::string::npos ? ';' : ' ');
    while (std::getline(cells, cell, separator)) {
      const auto b = cell.find_first_not_of(" \t");
      if (b == std::string::npos) {
        if (separator == ' ') continue;
        at.fail("input file " + path + ":" + std::to_string(line_number) + ": empty cell");
      }
      const auto e = cell.find_last_not_of(" \t");
      cell = cell.substr(b, e - b + 1);
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (end != cell.c_str() + cell.size() || !std::isfinite(v)) {
        if (first_content) {
          header = true;
          break;
        }
        at.fail("input file " + path + ":" + std::to_string(line_number) + ": '" + cell + "' is not a number");
      }
      row.push_back(v);
    }
    first_content = false;
    if (header) continue;
    if (!rows.empty() && row.size() != rows.front().size()) {
      at.fail("input file " + path + ":" + std::to_string(line_number) + ": " + std::to_string(row.size()) +
              " values, but the first row has " + std::to_string(rows.front().size()));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) at.fail("input file '" + path + "' holds no numbers");
  return rows;
}

std::vector<std::vector<double>> read_json(const std::string& path, const Y& at) {
  std::ifstream in(path);
  if (!in) at.fail("cannot read input file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(text.str(), ec);
  if (ec) at.fail("input file '" + path + "' is not valid JSON: " + ec.message());
  if (doc.is_object() && doc.as_object().contains("values")) doc = doc.as_object().at("values");
  const auto number = [&](const boost::json::value& v) {
    if (v.is_double()) return v.get_double();
    if (v.is_int64()) return static_cast<double>(v.get_int64());
    if (v.is_uint64()) return static_cast<double>(v.get_uint64());
    at.fail("input file '" + path + "': expected numbers, got " + boost::json::serialize(v));
  };
  if (!doc.is_array() || doc.as_array().empty()) {
    at.fail("input file '" + path + "': expected a non-empty array of numbers or of rows (or {\"values\": ...})");
  }
  std::vector<std::vector<double>> rows;
  const auto& array = doc.as_array();
  if (!array[0].is_array()) {
    std::vector<double> row;
    for (const auto& v : array) row.push_back(number(v));
    rows.push_back(std::move(row));
    return rows;
  }
  for (const auto& r : array) {
    if (!r.is_array() || r.as_array().empty())
      at.fail("input file '" + path + "': every row must be a non-empty array");
    std::vector<double> row;
    for (const auto& v : r.as_array()) row.push_back(number(v));
    if (!rows.empty() && row.size() != rows.front().size()) {
      at.fail("input file '" + path + "': rows differ in length (" + std::to_string(rows.front().size()) + " and " +
              std::to_string(row.size()) + ")");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void set_shape(InputSpec& input, std::vector<std::vector<double>> rows) {
  // One row, or one column: a vector. Several of each: a matrix.
  if (rows.size() == 1) {
    input.values = std::move(rows[0]);
    input.cols = input.values.size();
    return;
  }
  if (rows[0].size() == 1) {
    for (auto& r : rows) input.values.push_back(r[0]);
    input.cols = input.values.size();
    return;
  }
  input.rows = rows.size();
  input.cols = rows[0].size();
  for (auto& r : rows) input.values.insert(input.values.end(), r.begin(), r.end());
}

// ---- sections ----

void parse_backend(const Y& y, BackendSpec& backend) {
  if (y.is_scalar()) {
    backend.name = y.str();
    return;
  }
  y.only({"name", "device", "options"}, "backend");
  if (auto n = y.get("name")) backend.name = n->str();
  if (auto d = y.get("device")) backend.device = d->integer_in(0, 1023);
  if (auto o = y.get("options")) {
    o->only({"search_path"}, "backend options");
    if (auto s = o->get("search_path")) {
      if (s->is_scalar()) {
        backend.search_path.push_back(s->str());
      } else {
        for (const Y& item : s->items()) backend.search_path.push_back(item.str());
      }
    }
  }
  if (backend.name.empty()) y.fail("the backend name is empty (use auto, cpu, cuda or a plugin path)");
}

std::vector<int> bit_list(const Y& y) {
  std::vector<int> out;
  for (const Y& item : y.items()) out.push_back(item.integer_in(20, 61));  // the core's prime sizes
  if (out.empty()) y.fail("expected at least one prime size");
  return out;
}

void parse_params(const Y& y, ParamsSpec& params) {
  params.mark = y.mark();
  if (y.is_scalar()) {
    params.preset = y.str();
  } else {
    y.only({"preset", "ring_degree", "q_bits", "p_bits", "scale_bits", "security_bits", "secret", "hamming_weight",
            "allow_insecure"},
           "params");
    if (auto p = y.get("preset")) params.preset = p->str();
  }
  CkksParameters& p = params.parameters;
  if (!params.preset.empty()) {
    try {
      p = preset(params.preset);
    } catch (const ParameterError& e) {
      const Y at = y.is_scalar() ? y : *y.get("preset");
      at.fail(std::string(e.what()));
    }
  }
  if (y.is_scalar()) return;
  const bool explicit_ring = y.has("ring_degree");
  if (params.preset.empty()) {
    (void)y.require("ring_degree", "give a preset (see `fhelium params`) or ring_degree, q_bits and scale_bits");
    (void)y.require("q_bits", "the ciphertext prime sizes in bits, q_0 first, e.g. [60, 40, 40, 40]");
  }
  if (explicit_ring) {
    const Y r = *y.get("ring_degree");
    const std::int64_t n = r.integer();
    if (n < 1024 || n > 131072 || (n & (n - 1)) != 0) {
      r.fail("the ring degree must be a power of two from 1024 to 131072, got " + std::to_string(n));
    }
    p.log_ring_degree = static_cast<int>(std::log2(static_cast<double>(n)));
  }
  if (auto q = y.get("q_bits")) {
    p.q_bits = bit_list(*q);
    if (!y.has("scale_bits") && params.preset.empty()) {
      p.scale = std::ldexp(1.0, p.q_bits.size() > 1 ? p.q_bits[1] : p.q_bits[0]);
    }
    if (!y.has("p_bits") && params.preset.empty()) p.p_bits = {*std::max_element(p.q_bits.begin(), p.q_bits.end())};
  }
  if (auto b = y.get("p_bits")) p.p_bits = bit_list(*b);
  if (auto s = y.get("scale_bits")) {
    const double bits = s->number();
    if (bits < 1 || bits > 120) s->fail("scale_bits must be in 1..120 (the scale is 2^scale_bits)");
    p.scale = std::exp2(bits);
  }
  if (auto s = y.get("security_bits")) {
    p.security_bits = s->integer_in(128, 256);
    if (p.security_bits != 128 && p.security_bits != 192 && p.security_bits != 256) {
      s->fail("security_bits must be 128, 192 or 256");
    }
  }
  if (auto s = y.get("secret")) {
    const std::string d = s->str();
    if (d == "ternary") {
      p.secret = SecretDistribution::ternary;
    } else if (d == "gaussian") {
      p.secret = SecretDistribution::gaussian;
    } else {
      s->fail("unknown secret distribution '" + d + "' " + known_list({"ternary", "gaussian"}, d));
    }
  }
  if (auto h = y.get("hamming_weight")) p.hamming_weight = h->integer_in(0, 1 << 17);
  if (auto a = y.get("allow_insecure")) p.allow_insecure = a->boolean();
  try {
    p.validate();
  } catch (const ParameterError& e) {
    y.fail(e.what());
  }
}

InputSpec parse_input(const std::string& name, const Y& y, const std::string& base_dir, const CkksParameters& params) {
  InputSpec in;
  in.name = name;
  in.mark = y.mark();
  in.key = y.path();
  if (y.is_sequence()) {  // x: [1, 2, 3] is short for x: {values: [1, 2, 3]}
    in.source = "inline";
    if (!y.items().empty() && y.items()[0].is_sequence()) {
      set_shape(in, y.matrix());
    } else {
      in.values = y.numbers();
      in.cols = in.values.size();
    }
  } else {
    y.only({"values", "random", "file", "format", "encrypted", "level", "scale_bits"}, "an input");
    const int sources = int(y.has("values")) + int(y.has("random")) + int(y.has("file"));
    if (sources != 1) {
      y.fail(sources == 0 ? "an input needs one of values (inline), random or file"
                          : "an input takes only one of values, random and file");
    }
    if (auto v = y.get("values")) {
      in.source = "inline";
      if (v->is_sequence() && !v->items().empty() && v->items()[0].is_sequence()) {
        set_shape(in, v->matrix());
      } else {
        in.values = v->numbers();
        in.cols = in.values.size();
      }
    } else if (auto r = y.get("random")) {
      r->only({"distribution", "range", "mean", "stddev", "length", "shape", "seed"}, "a random input");
      std::string distribution = "uniform";
      if (auto d = r->get("distribution")) distribution = d->str();
      if (distribution != "uniform" && distribution != "normal") {
        r->get("distribution")
            ->fail("unknown distribution '" + distribution + "' " + known_list({"uniform", "normal"}, distribution));
      }
      std::uint64_t seed = 1;
      if (auto s = r->get("seed")) seed = static_cast<std::uint64_t>(s->integer());
      std::size_t rows = 0, cols = 0;
      if (r->has("length") == r->has("shape"))
        r->fail("a random input needs one of length (a vector) or shape [rows, cols]");
      if (auto l = r->get("length")) {
        cols = static_cast<std::size_t>(l->integer_in(1, 1 << 20));
      } else {
        const auto shape = r->get("shape")->items();
        if (shape.size() != 2) r->get("shape")->fail("shape is [rows, cols]");
        rows = static_cast<std::size_t>(shape[0].integer_in(1, 1 << 20));
        cols = static_cast<std::size_t>(shape[1].integer_in(1, 1 << 20));
      }
      // A shape is checked before anything is generated: no use of a matrix reaches past the slots.
      const std::size_t slots = params.max_slots();
      if (rows != 0 && (rows > slots || cols > slots)) {
        r->get("shape")->fail("input '" + name + "' of " + std::to_string(rows) + " x " + std::to_string(cols) +
                              " values: the parameters give " + std::to_string(slots) +
                              " slots, and neither a vector nor a matrix side may exceed them");
      }
      SplitMix rng{seed};
      const std::size_t count = (rows ? rows : 1) * cols;
      std::ostringstream description;
      if (distribution == "uniform") {
        double lo = -1, hi = 1;
        if (r->has("mean") || r->has("stddev"))
          r->fail("mean and stddev are for the normal distribution; uniform takes range");
        if (auto range = r->get("range")) {
          const auto bounds = range->numbers();
          if (bounds.size() != 2 || !(bounds[0] < bounds[1])) range->fail("range is [low, high] with low < high");
          lo = bounds[0];
          hi = bounds[1];
        }
        for (std::size_t i = 0; i < count; ++i) in.values.push_back(lo + (hi - lo) * rng.uniform01());
        description << "uniform [" << lo << ", " << hi << "], seed " << seed;
      } else {
        double mean = 0, stddev = 1;
        if (r->has("range")) r->fail("range is for the uniform distribution; normal takes mean and stddev");
        if (auto m = r->get("mean")) mean = m->number();
        if (auto s = r->get("stddev")) {
          stddev = s->number();
          if (!(stddev > 0)) s->fail("stddev must be positive");
        }
        for (std::size_t i = 0; i < count; ++i) {  // Box-Muller
          const double u1 = 1.0 - rng.uniform01();
          const double u2 = rng.uniform01();
          in.values.push_back(mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
        }
        description << "normal mean " << mean << " stddev " << stddev << ", seed " << seed;
      }
      in.rows = rows;
      in.cols = cols;
      in.source = description.str();
    } else {
      const Y f = *y.get("file");
      const std::string file = f.str();
      std::filesystem::path path(file);
      if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
      std::string format;
      if (auto fmt = y.get("format")) {
        format = fmt->str();
        if (format != "csv" && format != "json")
          fmt->fail("unknown format '" + format + "' " + known_list({"csv", "json"}, format));
      } else {
        const std::string ext = path.extension().string();
        if (ext == ".csv" || ext == ".txt") {
          format = "csv";
        } else if (ext == ".json") {
          format = "json";
        } else {
          f.fail("cannot tell the format of '" + file + "' from its extension: add format: csv or format: json");
        }
      }
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec)) {
        f.fail("input file '" + file + "' does not exist (looked for " +
               std::filesystem::absolute(path).lexically_normal().string() +
               "; relative paths are resolved against the pipeline's folder)");
      }
      set_shape(in, format == "csv" ? read_csv(path.string(), f) : read_json(path.string(), f));
      in.source = "file " + file;
    }
    if (y.has("format") && !y.has("file")) y.get("format")->fail("format applies to file inputs only");
    if (auto e = y.get("encrypted")) in.encrypted = e->boolean();
    if (auto l = y.get("level")) {
      if (!in.encrypted) l->fail("level applies to encrypted inputs (a plaintext is encoded where it is used)");
      in.level = l->integer_in(0, params.max_level());
    }
    if (auto s = y.get("scale_bits")) {
      if (!in.encrypted)
        s->fail("scale_bits applies to encrypted inputs (a plaintext is encoded at the scale its use needs)");
      const double bits = s->number();
      if (bits < 1 || bits > 120) s->fail("scale_bits must be in 1..120");
      in.scale = std::exp2(bits);
    }
  }
  if (in.values.empty()) y.fail("input '" + name + "' has no values");
  const std::size_t slots = params.max_slots();
  const std::size_t packed = in.is_matrix() ? in.rows * next_power_of_two(in.cols) : in.cols;
  // A plaintext matrix is used by matvec (diagonals), not packed; its sides are checked there.
  if ((in.encrypted || !in.is_matrix()) && packed > slots) {
    y.fail("input '" + name + "' has " +
           (in.is_matrix() ? std::to_string(in.rows) + "x" + std::to_string(in.cols) + " values (" +
                                 std::to_string(packed) + " slots packed, rows padded to a power of two)"
                           : std::to_string(in.cols) + " values") +
           " but the parameters give " + std::to_string(slots) +
           " slots (ring degree / 2): shorten it or use a larger ring degree (e.g. a slots" +
           std::to_string(next_power_of_two(packed)) + "_... preset)");
  }
  return in;
}

struct OpInfo {
  int min_args;
  int max_args;                   // -1: any number
  std::vector<std::string> keys;  // besides name, op, args
};

const std::map<std::string, OpInfo>& op_table() {
  static const std::map<std::string, OpInfo> table = {
      {"add", {2, 2, {}}},
      {"sub", {2, 2, {}}},
      {"negate", {1, 1, {}}},
      {"add_scalar", {1, 1, {"value"}}},
      {"sub_scalar", {1, 1, {"value"}}},
      {"multiply", {2, 2, {}}},
      {"relinearize", {1, 1, {}}},
      {"multiply_plain", {2, 2, {"scale_bits"}}},
      {"multiply_scalar", {1, 1, {"value", "scalar_scale", "scalar_scale_bits"}}},
      {"multiply_integer", {1, 1, {"value"}}},
      {"rescale", {1, 1, {}}},
      {"drop_to_level", {1, 1, {"level"}}},
      {"rotate", {1, 1, {"step"}}},
      {"conjugate", {1, 1, {}}},
      {"rotate_hoisted", {1, 1, {"steps", "names"}}},
      {"to_ntt", {1, 1, {}}},
      {"to_coefficient", {1, 1, {}}},
      {"sum", {1, -1, {}}},
      {"multiply_relinearize_rescale", {2, 2, {}}},
      {"matvec", {1, 1, {"matrix", "method"}}},
      {"polynomial", {1, 1, {"coefficients", "method"}}},
      {"inner_product", {2, 2, {"width"}}},
      {"sum_slots", {1, 1, {"width"}}},
      {"align", {1, 1, {"to"}}},
      {"bootstrap",
       {1,
        1,
        {"coeff_to_slot_levels", "slot_to_coeff_levels", "double_angle", "cosine_degree", "message_ratio",
         "arcsine_correction", "horner_giants"}}},
  };
  return table;
}

StepSpec parse_step(const Y& y, const CkksParameters& params) {
  StepSpec s;
  s.mark = y.mark();
  s.key = y.path();
  if (!y.is_map()) y.fail("a step is a map like {name: y, op: rotate, args: [x], step: 1}");
  const Y op = y.require("op", "the operation, e.g. add, rotate, matvec, polynomial");
  s.op = op.str();
  s.op_mark = op.mark();
  std::vector<std::string> known_ops;
  for (const auto& [k, v] : op_table()) known_ops.push_back(k);
  const auto it = op_table().find(s.op);
  if (it == op_table().end()) op.fail("unknown operation '" + s.op + "' " + known_list(known_ops, s.op));
  const OpInfo& info = it->second;
  std::vector<std::string> keys = {"name", "op", "args"};
  keys.insert(keys.end(), info.keys.begin(), info.keys.end());
  y.only(keys, "operation " + s.op);
  s.name = y.require("name", "the name of the step's result").name("value");
  const Y args = y.require("args", "the names of the operands");
  if (args.is_scalar()) {
    s.args.push_back(args.str());
    s.arg_marks.push_back(args.mark());
  } else {
    for (const Y& a : args.items()) {
      s.args.push_back(a.str());
      s.arg_marks.push_back(a.mark());
    }
  }
  const int n = static_cast<int>(s.args.size());
  if (n < info.min_args || (info.max_args >= 0 && n > info.max_args)) {
    const std::string expected =
        info.max_args < 0 ? "at least " + std::to_string(info.min_args) : std::to_string(info.min_args);
    args.fail("operation " + s.op + " takes " + expected + " argument" +
              (info.min_args == 1 && info.max_args == 1 ? "" : "s") + ", got " + std::to_string(n));
  }
  const auto need = [&](const std::string& key, const std::string& hint) { return y.require(key, hint); };
  if (s.op == "add_scalar" || s.op == "sub_scalar") s.value = need("value", "the constant").number();
  if (s.op == "multiply_scalar") {
    s.value = need("value", "the constant").number();
    if (y.has("scalar_scale") && y.has("scalar_scale_bits")) y.fail("give scalar_scale or scalar_scale_bits, not both");
    if (auto ss = y.get("scalar_scale")) {
      s.scalar_scale = ss->number();
      if (!(*s.scalar_scale >= 1)) ss->fail("scalar_scale must be >= 1");
    }
    if (auto ss = y.get("scalar_scale_bits")) {
      const double bits = ss->number();
      if (bits < 0 || bits > 120) ss->fail("scalar_scale_bits must be in 0..120");
      s.scalar_scale = std::exp2(bits);
    }
  }
  if (s.op == "multiply_integer") s.integer = need("value", "the integer").integer();
  if (s.op == "multiply_plain") {
    if (auto b = y.get("scale_bits")) {
      const double bits = b->number();
      if (bits < 0 || bits > 120) b->fail("scale_bits must be in 0..120");
      s.plain_scale = std::exp2(bits);
    }
  }
  if (s.op == "drop_to_level") s.level = need("level", "the target level").integer_in(0, params.max_level());
  if (s.op == "bootstrap") {
    auto& o = s.bootstrap;
    const int log_slots = params.log_ring_degree - 1;
    if (auto v = y.get("coeff_to_slot_levels")) o.coeff_to_slot_levels = v->integer_in(1, log_slots);
    if (auto v = y.get("slot_to_coeff_levels")) o.slot_to_coeff_levels = v->integer_in(1, log_slots);
    if (auto v = y.get("double_angle")) o.double_angle = v->integer_in(0, 8);
    if (auto v = y.get("cosine_degree")) o.cosine_degree = v->integer_in(1, 1023);
    if (auto v = y.get("message_ratio")) {
      o.message_ratio = v->number();
      if (!(*o.message_ratio >= 1 && *o.message_ratio <= 65536)) v->fail("message_ratio must be in 1..65536");
    }
    if (auto v = y.get("arcsine_correction")) o.arcsine_correction = v->boolean();
    if (auto v = y.get("horner_giants")) o.horner_giants = v->boolean();
  }
  const long slots = static_cast<long>(params.max_slots());
  if (s.op == "rotate") {
    const Y st = need("step", "slots to rotate left (negative: right)");
    const std::int64_t v = st.integer();
    if (v <= -slots || v >= slots) {
      st.fail("rotation step " + std::to_string(v) + " is out of range -" + std::to_string(slots - 1) + ".." +
              std::to_string(slots - 1));
    }
    s.step = static_cast<long>(v);
  }
  if (s.op == "rotate_hoisted") {
    const Y st = need("steps", "the rotation steps, e.g. [1, 2, 3]");
    for (const Y& item : st.items()) {
      const std::int64_t v = item.integer();
      if (v <= -slots || v >= slots) {
        item.fail("rotation step " + std::to_string(v) + " is out of range -" + std::to_string(slots - 1) + ".." +
                  std::to_string(slots - 1));
      }
      s.steps.push_back(static_cast<long>(v));
    }
    if (s.steps.empty()) st.fail("give at least one rotation step");
    if (auto names = y.get("names")) {
      for (const Y& item : names->items()) s.result_names.push_back(item.name("value"));
      if (s.result_names.size() != s.steps.size()) {
        names->fail("give one name per step (" + std::to_string(s.steps.size()) + "), got " +
                    std::to_string(s.result_names.size()));
      }
    } else {
      for (std::size_t i = 0; i < s.steps.size(); ++i) s.result_names.push_back(s.name + "_" + std::to_string(i));
    }
  }
  if (s.op == "matvec") {
    const Y m = need("matrix", "a plaintext matrix input's name, or an inline list of rows");
    if (m.is_scalar()) {
      s.matrix_input = m.str();
    } else {
      s.matrix = m.matrix();
    }
    if (auto method = y.get("method")) {
      const std::string name = method->str();
      if (name == "bsgs" || name == "baby_step_giant_step") {
        s.matvec_bsgs = true;
      } else if (name != "diagonal") {
        method->fail("unknown method '" + name + "' " + known_list({"diagonal", "bsgs"}, name));
      }
    }
  }
  if (s.op == "polynomial") {
    const Y c = need("coefficients", "c0, c1, ..., the power-basis coefficients");
    s.coefficients = c.numbers();
    while (!s.coefficients.empty() && s.coefficients.back() == 0.0) s.coefficients.pop_back();
    if (s.coefficients.size() < 2) c.fail("a polynomial needs degree >= 1 (a non-zero coefficient after c0)");
    if (s.coefficients.size() > 1025) c.fail("degree above 1024 is not supported");
    // Both names describe the one evaluator (baby-step giant-step powers with
    // Paterson-Stockmeyer's recursive split); older pipelines name either.
    if (auto m = y.get("method")) {
      const std::string method = m->str();
      const bool known =
          method == "bsgs" || method == "baby_step_giant_step" || method == "paterson_stockmeyer" || method == "ps";
      if (!known) m->fail("unknown method '" + method + "' " + known_list({"bsgs", "paterson_stockmeyer"}, method));
    }
  }
  if (s.op == "inner_product" || s.op == "sum_slots") {
    if (auto w = y.get("width")) {
      const std::int64_t v = w->integer();
      if (v < 1 || v > slots || (v & (v - 1)) != 0) {
        w->fail("width must be a power of two from 1 to the slot count " + std::to_string(slots) + ", got " +
                std::to_string(v));
      }
      s.width = static_cast<std::size_t>(v);
    }
  }
  if (s.op == "align") s.to = need("to", "the value whose level and scale to reach").str();
  return s;
}

void parse_execution(const Y& y, ExecutionSpec& e) {
  e.mark = y.mark();
  y.only({"mode", "repetitions", "warmup", "seed"}, "execution");
  if (auto m = y.get("mode")) {
    const std::string mode = m->str();
    if (mode == "eager") {
      e.mode = ExecutionMode::eager;
    } else if (mode == "program") {
      e.mode = ExecutionMode::program;
    } else if (mode == "graph") {
      e.mode = ExecutionMode::graph;
    } else {
      m->fail("unknown mode '" + mode + "' " + known_list({"eager", "program", "graph"}, mode));
    }
  }
  if (auto r = y.get("repetitions")) e.repetitions = r->integer_in(1, 100000);
  if (auto w = y.get("warmup")) e.warmup = w->integer_in(0, 100000);
  if (auto s = y.get("seed")) e.seed = static_cast<std::uint64_t>(s->integer());
}

OutputSpec parse_output(const Y& y) {
  OutputSpec o;
  o.mark = y.mark();
  o.key = y.path();
  if (y.is_scalar()) {
    o.value = y.str();
    o.name = o.value;
    return o;
  }
  y.only({"value", "name", "file", "format", "count", "stride", "max_error"}, "an output");
  o.value = y.require("value", "the step or input to decrypt").str();
  o.name = o.value;
  if (auto n = y.get("name")) o.name = n->name("output");
  if (auto f = y.get("file")) o.file = f->str();
  if (auto f = y.get("format")) {
    o.format = f->str();
    if (o.format != "json" && o.format != "csv")
      f->fail("unknown format '" + o.format + "' " + known_list({"json", "csv"}, o.format));
    if (o.file.empty()) f->fail("format needs a file");
  } else if (!o.file.empty()) {
    const std::string ext = std::filesystem::path(o.file).extension().string();
    if (ext == ".json") {
      o.format = "json";
    } else if (ext == ".csv") {
      o.format = "csv";
    } else {
      y.get("file")->fail("cannot tell the format of '" + o.file +
                          "' from its extension: use .json or .csv, or add format");
    }
  }
  if (auto c = y.get("count")) o.count = static_cast<std::size_t>(c->integer_in(1, 1 << 20));
  if (auto s = y.get("stride")) o.stride = static_cast<std::size_t>(s->integer_in(1, 1 << 20));
  if (auto m = y.get("max_error")) {
    o.max_error = m->number();
    if (!(*o.max_error > 0)) m->fail("max_error must be positive");
  }
  return o;
}

void parse_outputs(const Y& y, PipelineSpec& spec) {
  y.only({"values", "report"}, "outputs");
  if (auto v = y.get("values")) {
    std::set<std::string> names;
    for (const Y& item : v->items()) {
      spec.outputs.push_back(parse_output(item));
      if (!names.insert(spec.outputs.back().name).second) {
        item.fail("two outputs are named '" + spec.outputs.back().name + "': give one a name");
      }
    }
  }
  if (auto r = y.get("report")) {
    r->only({"file", "step_errors", "include_values"}, "the report");
    if (auto f = r->get("file")) spec.report.file = f->str();
    if (auto s = r->get("step_errors")) spec.report.step_errors = s->boolean();
    if (auto i = r->get("include_values"))
      spec.report.include_values = static_cast<std::size_t>(i->integer_in(0, 1 << 20));
  }
}

// Where YAML syntax failed: the dotted path of the last block key at or
// before `line` (0-based), from indentation ("inputs.x").
std::string key_path_at(const std::string& text, int line) {
  std::istringstream in(text);
  std::string l;
  std::vector<std::pair<std::size_t, std::string>> stack;  // indent, key
  for (int i = 0; i <= line && std::getline(in, l); ++i) {
    std::size_t indent = l.find_first_not_of(' ');
    if (indent == std::string::npos || l[indent] == '#') continue;
    std::size_t k = indent;
    while (k + 1 < l.size() && l[k] == '-' && l[k + 1] == ' ') {
      k = l.find_first_not_of(' ', k + 1);
      if (k == std::string::npos) break;
    }
    if (k == std::string::npos) continue;
    std::size_t e = k;
    while (e < l.size() && (std::isalnum(static_cast<unsigned char>(l[e])) || l[e] == '_')) ++e;
    if (e == k || e >= l.size() || l[e] != ':') continue;
    while (!stack.empty() && stack.back().first >= k) stack.pop_back();
    stack.emplace_back(k, l.substr(k, e - k));
  }
  std::string path;
  for (const auto& [indent, key] : stack) path += (path.empty() ? "" : ".") + key;
  return path;
}

// The last '[' or '{' before (line, column) that is not closed, if any.
std::optional<std::pair<int, int>> unclosed_flow(const std::string& text, int line, int column) {
  std::vector<std::pair<int, int>> open;
  int l = 0, c = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (l > line || (l == line && c >= column)) break;
    const char ch = text[i];
    if (quote) {
      if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (ch == '[' || ch == '{') {
      open.emplace_back(l, c);
    } else if ((ch == ']' || ch == '}') && !open.empty()) {
      open.pop_back();
    }
    if (ch == '\n') {
      ++l;
      c = 0;
    } else {
      ++c;
    }
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

// More YAML nodes than any pipeline needs (a matrix of 8192 x 8 values is
// 65,536): a file whose aliases repeat a large value is refused before
// anything expands it further.
constexpr std::size_t max_yaml_nodes = 4'000'000;

// Refuses a key given twice in one map (yaml-cpp keeps the first one
// silently), naming both lines, and a document over max_yaml_nodes.
void check_document(const YAML::Node& node, const std::string& path, const std::string& file, std::size_t& visits) {
  const auto mark = [&](const YAML::Node& n) {
    return SourceMark{file, n.Mark().is_null() ? 0 : n.Mark().line + 1, n.Mark().is_null() ? 0 : n.Mark().column + 1};
  };
  if (++visits > max_yaml_nodes) {
    throw PipelineError(mark(node), path,
                        "the document expands to more than " + std::to_string(max_yaml_nodes) +
                            " YAML values (aliases repeating a large value?); no pipeline needs that many");
  }
  if (node.IsMap()) {
    std::map<std::string, int> lines;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) continue;  // the key's own check names it
      const std::string key = it->first.Scalar();
      const std::string child = path.empty() ? key : path + "." + key;
      const int line = mark(it->first).line;
      const auto [first, fresh] = lines.emplace(key, line);
      if (!fresh) {
        throw PipelineError(mark(it->first), child,
                            "duplicate key '" + key + "': given at line " + std::to_string(first->second) +
                                " and again at line " + std::to_string(line) + "; remove one");
      }
      check_document(it->second, child, file, visits);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      check_document(node[i], path + "[" + std::to_string(i) + "]", file, visits);
    }
  }
}

}  // namespace

PipelineSpec parse_pipeline(const std::string& yaml_text, const std::string& file_name,
                            const std::vector<std::string>& overrides, const std::string& base_dir) {
  Document doc;
  doc.file = file_name;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    std::string reason = "YAML syntax error: " + e.msg;
    int key_line = e.mark.line;
    if (e.msg.find("flow") != std::string::npos) {
      if (const auto opener = unclosed_flow(yaml_text, e.mark.line, e.mark.column)) {
        key_line = opener->first;
        std::istringstream lines(yaml_text);
        std::string text_line;
        for (int i = 0; i <= opener->first; ++i) std::getline(lines, text_line);
        const char bracket = text_line[static_cast<std::size_t>(opener->second)];
        reason = "YAML syntax error: " + e.msg + ": the '" + std::string(1, bracket) + "' at line " +
                 std::to_string(opener->first + 1) + ", column " + std::to_string(opener->second + 1) +
                 " is never closed";
      }
    }
    throw PipelineError({file_name, e.mark.line + 1, e.mark.column + 1}, key_path_at(yaml_text, key_line), reason);
  } catch (const YAML::Exception& e) {
    throw PipelineError({file_name, 0, 0}, "", "YAML error: " + e.msg);
  }
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw PipelineError({file_name, 1, 1}, "", "a pipeline file is a map with params, inputs and steps");
  std::size_t visits = 0;
  check_document(root, "", file_name, visits);
  for (const auto& text : overrides) {
    const std::string path = apply_override(root, text);
    doc.overrides.emplace_back(path, text);
  }
  const Y top(root, "", &doc);
  top.only({"name", "description", "backend", "params", "inputs", "steps", "execution", "outputs"}, "a pipeline");

  PipelineSpec spec;
  spec.file = file_name;
  spec.base_dir = base_dir;
  spec.name = std::filesystem::path(file_name).stem().string();
  if (spec.name.empty() || spec.name == "<string>") spec.name = "pipeline";
  if (auto n = top.get("name")) spec.name = n->str();
  if (auto d = top.get("description")) spec.description = d->str();
  if (auto b = top.get("backend")) parse_backend(*b, spec.backend);
  parse_params(top.require("params", "a preset name (see `fhelium params`) or explicit parameters"), spec.params);
  const CkksParameters& params = spec.params.parameters;

  std::set<std::string> names;
  const Y inputs = top.require("inputs", "a map of input names to values, random or file");
  for (const auto& [name, y] : inputs.entries()) {
    if (!is_identifier(name) || name.rfind("__", 0) == 0) {
      y.fail("'" + name + "' is not a valid input name: use letters, digits and '_', starting with a letter");
    }
    spec.inputs.push_back(parse_input(name, y, base_dir, params));
    names.insert(name);
  }
  const Y steps = top.require("steps", "a list of operations, e.g. - {name: y, op: rotate, args: [x], step: 1}");
  for (const Y& y : steps.items()) {
    spec.steps.push_back(parse_step(y, params));
    const StepSpec& s = spec.steps.back();
    std::vector<std::string> defined = s.op == "rotate_hoisted" ? s.result_names : std::vector<std::string>{s.name};
    for (const auto& n : defined) {
      if (!names.insert(n).second) {
        y.require("name").fail("the name '" + n +
                               "' is already defined (by an input or an earlier step): names are assigned once");
      }
    }
  }
  if (spec.steps.empty()) steps.fail("the pipeline has no steps");
  if (auto e = top.get("execution")) parse_execution(*e, spec.execution);
  if (auto o = top.get("outputs")) parse_outputs(*o, spec);
  if (spec.outputs.empty()) {
    OutputSpec o;
    o.value = spec.steps.back().op == "rotate_hoisted" ? spec.steps.back().result_names.back() : spec.steps.back().name;
    o.name = o.value;
    o.mark = spec.steps.back().mark;
    o.key = spec.steps.back().key;
    spec.outputs.push_back(o);
  }
  return spec;
}

PipelineSpec load_pipeline(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) {
    throw PipelineError(
        {path, 0, 0}, "",
        std::filesystem::exists(path) ? "cannot read the pipeline file" : "the pipeline file does not exist");
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::filesystem::path p(path);
  const std::string base = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  return parse_pipeline(text.str(), path, overrides, base);
}

}  // namespace fhelium::runtime
