// GoogleTest checks shared by the suites: the message of an expected
// exception, message fragments, and residue-for-residue equality of values.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "fhelium/engine.hpp"

namespace fhelium::test {

// The message of the exception of type E (or derived) that `f` throws; a
// failure when it throws something else or nothing.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception was thrown";
  return "";
}

inline void expect_contains(const std::string& message, std::initializer_list<std::string> fragments) {
  for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << message << "' lacks '" << f << "'";
}

inline std::vector<HostValue> download_all(const Engine& e, const std::vector<Ciphertext>& values) {
  std::vector<HostValue> out;
  for (const auto& v : values) out.push_back(e.download(v));
  return out;
}

// Same states and the same residues, output by output.
inline void expect_same(const std::vector<HostValue>& expected, const std::vector<HostValue>& actual,
                        const char* what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].state, actual[i].state) << what << ", output " << i;
    EXPECT_TRUE(expected[i].data == actual[i].data)
        << what << ", output " << i << " (" << expected[i].state.describe() << "): residues differ";
  }
}

}  // namespace fhelium::test
