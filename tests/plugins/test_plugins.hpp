// Where the test plugins are built (FHELIUM_TEST_PLUGIN_DIR, set by CMake).
#pragma once

#include <string>

namespace fhelium::test {

inline std::string plugin(const std::string& folder, const std::string& name) {
  return std::string(FHELIUM_TEST_PLUGIN_DIR) + "/" + folder + "/libfhelium-backend-" + name + ".so";
}

}  // namespace fhelium::test
