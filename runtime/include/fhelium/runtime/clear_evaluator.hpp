// A Program run in double precision on clear complex slots: the values a
// correct encrypted run decrypts to, up to CKKS noise. Tests, circuits and
// the pipeline's reports use it as the expected answer, so the calculation is
// described once (the Program) and never a second time by hand.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::runtime {

// `inputs` and `constants` by name, each at most `slots` values (shorter ones
// are padded with zeros, as the encoder does). Returns one entry per output,
// `slots` values each. Scales and levels do not exist here: multiply_scalar
// multiplies by its value, rescale and relinearize are identities.
// InvalidArgumentError names a missing or oversized input or constant.
std::map<std::string, Slots> evaluate_clear(const Program& program, const std::map<std::string, Slots>& inputs,
                                            const std::map<std::string, Slots>& constants, std::size_t slots);
// Every value of the program, by value id (Program::values()).
std::vector<Slots> evaluate_clear_values(const Program& program, const std::map<std::string, Slots>& inputs,
                                         const std::map<std::string, Slots>& constants, std::size_t slots);

}  // namespace fhelium::runtime
