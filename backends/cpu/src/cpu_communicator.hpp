// Device collectives between cpu backends of one process: a broadcast is a
// memory copy from the root's buffer into every other rank's, between two
// barriers. An id names a group in this library's registry.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "fhelium/backend/backend.hpp"

namespace fhelium::cpu {

CommunicatorId new_communicator_id();
std::unique_ptr<DeviceCommunicator> join_cpu_communicator(const CommunicatorId& id, int ranks, int rank,
                                                          std::chrono::milliseconds timeout);

}  // namespace fhelium::cpu
