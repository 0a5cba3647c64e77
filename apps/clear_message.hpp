// Clear messages for the apps' checks against double-precision results.
#pragma once

#include <algorithm>
#include <complex>
#include <vector>

namespace fhelium::apps {

using Message = std::vector<std::complex<double>>;

// Largest absolute slot difference.
inline double max_error(const Message& expected, const Message& actual) {
  double e = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) e = std::max(e, std::abs(expected[i] - actual[i]));
  return e;
}

// Largest difference of the real parts: the values a user who encodes real
// numbers reads back (SEAL's decode into doubles drops the imaginary parts).
inline double max_real_error(const Message& expected, const Message& actual) {
  double e = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) e = std::max(e, std::abs(expected[i].real() - actual[i].real()));
  return e;
}

}  // namespace fhelium::apps
