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

// body(thread, team) once on each thread of a team of at most `threads`
// (thread = 0 .. team - 1; the team is smaller inside another parallel region).
template <class Body>
void on_each_thread(int threads, const Body& body) {
#pragma omp parallel num_threads(threads) if (threads > 1)
  body(omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace fhelium::cpu
