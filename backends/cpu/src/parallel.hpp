// A parallel loop over [0, count) with a fixed thread count (OpenMP).
#pragma once

#include <omp.h>

#include <cstddef>

namespace fhelium::cpu {

template <class Body>
void parallel_for(int threads, std::size_t count, const Body& body) {
  const long n = static_cast<long>(count);
#pragma omp parallel for num_threads(threads) schedule(static) if (n > 1 && threads > 1)
  for (long i = 0; i < n; ++i) body(static_cast<std::size_t>(i));
}

}  // namespace fhelium::cpu
