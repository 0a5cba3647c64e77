// The pipeline report as JSON (Boost.JSON), pretty-printed.
#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "fhelium/error.hpp"
#include "fhelium/runtime/pipeline.hpp"

namespace fhelium::runtime {
namespace {

namespace json = boost::json;

// Doubles in their shortest round-trip form (40, 2.5e-08), not Boost's 4E1.
void scalar(std::ostream& os, const json::value& v) {
  if (!v.is_double()) {
    os << json::serialize(v);
    return;
  }
  const double d = v.get_double();
  if (!std::isfinite(d)) {
    os << "null";
    return;
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, d);
  os << std::string_view(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

void pretty(std::ostream& os, const json::value& v, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  const std::string inner(static_cast<std::size_t>(indent + 2), ' ');
  if (v.is_object()) {
    const auto& o = v.as_object();
    if (o.empty()) {
      os << "{}";
      return;
    }
    os << "{\n";
    std::size_t i = 0;
    for (const auto& [key, child] : o) {
      os << inner << json::serialize(json::value(key)) << ": ";
      pretty(os, child, indent + 2);
      os << (++i < o.size() ? ",\n" : "\n");
    }
    os << pad << "}";
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    const bool flat =
        std::all_of(a.begin(), a.end(), [](const json::value& x) { return !x.is_object() && !x.is_array(); });
    if (a.empty() || flat) {
      os << "[";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) os << ", ";
        scalar(os, a[i]);
      }
      os << "]";
      return;
    }
    os << "[\n";
    for (std::size_t i = 0; i < a.size(); ++i) {
      os << inner;
      pretty(os, a[i], indent + 2);
      os << (i + 1 < a.size() ? ",\n" : "\n");
    }
    os << pad << "]";
  } else {
    scalar(os, v);
  }
}

json::object errors(const ErrorStats& e) {
  return {{"max", e.max},    {"mean", e.mean}, {"rms", e.rms}, {"bits", e.bits}, {"max_expected", e.max_expected},
          {"slots", e.count}};
}

json::value optional_number(const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); }

}  // namespace

std::string PipelineReport::to_json() const {
  json::object params{{"preset", preset},
                      {"ring_degree", std::uint64_t{1} << parameters.log_ring_degree},
                      {"slots", parameters.max_slots()},
                      {"levels", parameters.max_level()},
                      {"q_bits", json::value_from(parameters.q_bits)},
                      {"p_bits", json::value_from(parameters.p_bits)},
                      {"log2_scale", std::log2(parameters.scale)},
                      {"log_qp", log_qp},
                      {"security_bits", parameters.security_bits},
                      {"security_budget", security_budget ? json::value(*security_budget) : json::value(nullptr)},
                      {"allow_insecure", parameters.allow_insecure}};
  json::array step_array;
  for (const StepReport& s : steps) {
    json::object o{{"name", s.state.name},
                   {"op", s.state.op},
                   {"level", s.state.level},
                   {"log2_scale", std::log2(s.state.scale)},
                   {"domain", to_string(s.state.domain)},
                   {"components", s.state.components},
                   {"length", s.state.length},
                   {"operations", s.state.operations},
                   {"median_ms", optional_number(s.median_ms)}};
    o["error"] = s.error ? json::value(errors(*s.error)) : json::value(nullptr);
    step_array.push_back(std::move(o));
  }
  json::array output_array;
  for (const OutputReport& r : outputs) {
    json::array digests;
    for (std::uint64_t d : r.digests) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(d));
      digests.push_back(json::string(hex));
    }
    output_array.push_back(json::object{{"name", r.name},
                                        {"value", r.value},
                                        {"level", r.level},
                                        {"log2_scale", std::log2(r.scale)},
                                        {"count", r.count},
                                        {"stride", r.stride},
                                        {"error", r.decrypted ? json::value(errors(r.error)) : json::value(nullptr)},
                                        {"max_error_bound", optional_number(r.bound)},
                                        {"within_bound", r.within_bound},
                                        {"file", r.file.empty() ? json::value(nullptr) : json::value(r.file)},
                                        {"values", json::value_from(r.values)},
                                        {"expected", json::value_from(r.expected)},
                                        {"residue_digests", std::move(digests)}});
  }
  json::array rotations;
  for (long s : rotation_steps) rotations.push_back(s);
  json::object timings{{"total_median_ms", total_median_ms},
                       {"total_ms", json::value_from(total_ms)},
                       {"keygen_ms", keygen_ms},
                       {"encrypt_ms", encrypt_ms},
                       {"decrypt_ms", decrypt_ms},
                       {"setup_ms", setup_ms},
                       {"capture_ms", optional_number(capture_ms)},
                       {"first_replay_ms", optional_number(first_replay_ms)},
                       {"wall_seconds", wall_seconds}};
  json::value parallel = nullptr;
  if (data_parallel) {
    parallel = json::object{{"devices", json::value_from(data_parallel->devices)},
                            {"repetitions", json::value_from(data_parallel->repetitions)},
                            {"wall_ms", data_parallel->wall_ms},
                            {"repetitions_per_second", data_parallel->repetitions_per_second},
                            {"key_broadcast_ms", data_parallel->key_broadcast_ms},
                            {"bytes_moved", data_parallel->bytes_moved},
                            {"transport", data_parallel->transport}};
  }
  json::object doc{
      {"pipeline", name},
      {"file", file},
      {"ok", ok},
      {"failures", json::value_from(failures)},
      {"backend", json::object{{"name", backend}, {"device", device}, {"devices", json::value_from(backend_devices)}}},
      {"params", std::move(params)},
      {"execution", json::object{{"mode", to_string(mode)},
                                 {"repetitions", repetitions},
                                 {"warmup", warmup},
                                 {"native_graph", native_graph ? json::value(*native_graph) : json::value(nullptr)}}},
      {"plan", json::object{{"depth", depth},
                            {"operations", operations},
                            {"keys", json::object{{"relinearization", relinearization_key},
                                                  {"conjugation", conjugation_key},
                                                  {"rotation_steps", std::move(rotations)},
                                                  {"bytes", key_bytes}}}}},
      {"steps", std::move(step_array)},
      {"outputs", std::move(output_array)},
      {"timings", std::move(timings)},
      {"data_parallel", std::move(parallel)},
      {"memory", json::object{{"backend_peak_bytes", backend_peak_bytes}, {"process_peak_bytes", process_peak_bytes}}}};
  std::ostringstream os;
  pretty(os, doc, 0);
  os << "\n";
  return os.str();
}

std::string pretty_json(const std::string& json_text) {
  boost::system::error_code ec;
  const json::value doc = json::parse(json_text, ec);
  if (ec) throw InvalidArgumentError("pretty_json: not valid JSON: " + ec.message());
  std::ostringstream os;
  pretty(os, doc, 0);
  os << "\n";
  return os.str();
}

}  // namespace fhelium::runtime
