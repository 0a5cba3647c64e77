// Device collectives between cuda backends over NCCL (docs/multi-device.md).
// NCCL is found at build time (nccl.h; without it these say "not built") and
// loaded at run time (dlopen of libnccl.so.2 on the loader's path), so the
// plugin loads and runs without it: communicator_id() is then empty and the
// runtime stages collectives through the host.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "device_runtime.hpp"
#include "fhelium/backend/backend.hpp"

namespace fhelium::cuda {

// "NCCL 2.28.9" when loaded, else why not ("not built: ...", "libnccl.so.2 did not load: ...").
std::string nccl_status();
// Whether NCCL was built in and libnccl.so.2 loads.
bool nccl_loads();
// A new NCCL unique id; nullopt when NCCL is not built or does not load.
std::optional<CommunicatorId> nccl_communicator_id();
// ncclCommInitRank (non-blocking, bounded by `timeout`) on runtime's device;
// broadcasts go on its stream and are refused during a capture.
std::unique_ptr<DeviceCommunicator> join_nccl_communicator(std::shared_ptr<DeviceRuntime> runtime,
                                                           const CommunicatorId& id, int ranks, int rank,
                                                           std::chrono::milliseconds timeout);

}  // namespace fhelium::cuda
