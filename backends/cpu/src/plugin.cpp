// The CPU backend as a plugin: libfhelium-backend-cpu.so.
#include <omp.h>

#include <string>

#include "fhelium/cpu/cpu_backend.hpp"
#include "fhelium/error.hpp"
#include "fhelium/plugin_sdk.hpp"

namespace {

std::shared_ptr<fhelium::Backend> make_backend(int device) {
  if (device != 0) {
    throw fhelium::InvalidArgumentError("the cpu backend has one device, index 0; got device " +
                                        std::to_string(device));
  }
  return fhelium::cpu::make_cpu_backend();
}

std::string describe(fhelium::Backend&) {
  return "cpu: " + std::to_string(omp_get_max_threads()) + " threads (OpenMP)" +
         (__builtin_cpu_supports("avx2") ? ", AVX2" : "");
}

}  // namespace

FHELIUM_DEFINE_BACKEND_PLUGIN_WITH_DEVICES("cpu", "0.1.0", make_backend, describe)
