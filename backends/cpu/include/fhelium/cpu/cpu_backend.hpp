// The CPU reference backend: the oracle every other backend is checked
// against, and the embedded default. Work runs synchronously on the calling
// thread, spread across limbs with OpenMP; replays of captured schedules and
// copies on created streams run on worker threads (RecordingBackend).
#pragma once

#include <memory>

#include "fhelium/backend/backend.hpp"

namespace fhelium::cpu {

struct CpuBackendOptions {
  int threads = 0;  // 0: OpenMP's default (OMP_NUM_THREADS or the core count)
};

std::shared_ptr<Backend> make_cpu_backend(CpuBackendOptions options = {});

}  // namespace fhelium::cpu
