#include "fhelium/security.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <sstream>
#include <tuple>
#include <map>

#include "fhelium/error.hpp"
#include "security_table.hpp"

namespace fhelium {
namespace {

using Key = std::tuple<std::string, int, std::uint64_t>;

const std::map<Key, int>& table() {
  static const std::map<Key, int> entries = [] {
    std::map<Key, int> out;
    const auto root = boost::json::parse(detail::security_table_json).as_object();
    for (const auto& row : root.at("table").as_array()) {
      const auto& r = row.as_object();
      out[{std::string(r.at("secret").as_string()), static_cast<int>(r.at("security_bits").as_int64()),
           static_cast<std::uint64_t>(r.at("ring_degree").as_int64())}] =
          static_cast<int>(r.at("max_log_qp").as_int64());
    }
    return out;
  }();
  return entries;
}

}  // namespace

std::string to_string(SecretDistribution d) { return d == SecretDistribution::ternary ? "ternary" : "gaussian"; }

std::optional<int> max_log_qp(SecretDistribution secret, int security_bits, std::uint64_t ring_degree) {
  const auto it = table().find({to_string(secret), security_bits, ring_degree});
  if (it == table().end()) return std::nullopt;
  return it->second;
}

void check_security(SecretDistribution secret, int security_bits, std::uint64_t ring_degree, double log_qp) {
  const auto budget = max_log_qp(secret, security_bits, ring_degree);
  std::ostringstream msg;
  if (!budget) {
    msg << "security table has no entry for ring degree " << ring_degree << ", " << to_string(secret)
        << " secret, " << security_bits
        << "-bit security: expected a ring degree the table covers (or allow_insecure = true)";
    throw SecurityError(msg.str());
  }
  if (log_qp > *budget) {
    // Enough digits that the value never prints as the budget it exceeds.
    int digits = 1;
    while (digits < 9 && std::abs(std::round(log_qp * std::pow(10.0, digits)) - *budget * std::pow(10.0, digits)) < 0.5) {
      ++digits;
    }
    msg.precision(digits);
    msg << std::fixed << "parameters are insecure: log2(QP) = " << log_qp << " exceeds the maximum "
        << *budget << " for ring degree " << ring_degree << ", " << to_string(secret) << " secret, "
        << security_bits << "-bit security (HE security guidelines 2025); use fewer or smaller primes, "
        << "a larger ring degree, or set allow_insecure = true to opt out";
    throw SecurityError(msg.str());
  }
}

}  // namespace fhelium
