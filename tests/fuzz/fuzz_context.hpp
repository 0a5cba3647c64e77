// The context every loader fuzz target and its seed corpus share: the smallest
// ring (N = 1024), one q prime and one special prime, so the seeds are a few
// KB and an execution takes microseconds. The primes are generated
// deterministically, so the fingerprint is the same in every build.
#pragma once

#include <memory>

#include "fhelium/context.hpp"

namespace fhelium::fuzz {

inline CkksParameters fuzz_parameters() {
  CkksParameters p;
  p.log_ring_degree = 10;
  p.q_bits = {50};
  p.p_bits = {50};
  p.scale = 1 << 20;
  p.allow_insecure = true;
  return p;
}

inline const std::shared_ptr<const Context>& fuzz_context_ptr() {
  static const std::shared_ptr<const Context> context = Context::create(fuzz_parameters());
  return context;
}

inline const Context& fuzz_context() { return *fuzz_context_ptr(); }

}  // namespace fhelium::fuzz
