// The HE security table ("Security Guidelines for Implementing Homomorphic
// Encryption", 2025): maximum log2(QP) per ring degree, secret distribution
// and classical security level. Embedded from core/data at build time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fhelium {

enum class SecretDistribution { ternary, gaussian };

std::string to_string(SecretDistribution d);

// Maximum log2(QP), or nothing when the table has no entry (for example
// ring degree 1024 at 192 bits).
std::optional<int> max_log_qp(SecretDistribution secret, int security_bits,
                              std::uint64_t ring_degree);

// Throws SecurityError, with the numbers, when log2(QP) exceeds the budget or
// the table has no entry for the combination.
void check_security(SecretDistribution secret, int security_bits, std::uint64_t ring_degree,
                    double log_qp);

}  // namespace fhelium
