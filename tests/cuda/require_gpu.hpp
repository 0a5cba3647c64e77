// Skips a CUDA test where no device is present (CI has no GPU).
#pragma once

#include <gtest/gtest.h>

#include "fhelium/cuda/cuda_backend.hpp"

#define REQUIRE_GPU()                                                                  \
  do {                                                                                 \
    if (!fhelium::cuda::device_available()) GTEST_SKIP() << "no CUDA device present"; \
  } while (0)
