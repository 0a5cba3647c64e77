// A Backend that tracks state only: its buffers remember their size and hold
// no data, every operation is a no-op, and upload/download refuse. An Engine
// over it runs its full validation and state bookkeeping at no cost, which is
// how Program::prepare checks a program before anything runs.
#pragma once

#include <memory>

#include "fhelium/backend/backend.hpp"

namespace fhelium::runtime::detail {

std::shared_ptr<Backend> make_state_backend();

}  // namespace fhelium::runtime::detail
