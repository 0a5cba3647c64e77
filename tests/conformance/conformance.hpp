// The backend conformance suite: runs every Engine operation on a backend
// under test and on the in-process CPU reference, from the same host values
// and keys, and compares the residues bit for bit; the backend's results are
// also decrypted and checked against the clear message. Every buffer the
// backend under test allocates is filled with 0xFF bytes first (0xFF..FF is
// no residue), so unwritten residues show up. A second family of cases calls
// Backend operations directly (prepare, allocate, 0xFF upload, the operation
// on PolyArg/KeyArg descriptors) with a guard limb past the end of each
// output, so overruns and modified inputs show up too.
//
// Case names: "N4096/L3/K2/level3/rotate(5)" (ring degree, levels, special
// primes, level of the inputs, operation); direct calls are "direct:OP".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"

namespace fhelium::conformance {

struct ConformanceOptions {
  std::vector<int> log_n = {12, 13, 14};
  int trials = 2;          // fresh messages and encryptions per trial; a case passes if every trial does
  std::uint64_t seed = 1;  // keys, messages and encryption randomness derive from it
  bool verbose = false;    // progress on stderr, one line per shape
  std::string filter;      // run only the cases whose name contains this substring
  // OpenMP threads of the CPU reference (0: OpenMP's default). One by default:
  // the reference shares the machine with the backend under test, and an
  // oversubscribed OpenMP team is many times slower than one thread.
  int reference_threads = 1;
};

struct CaseResult {
  std::string name;
  bool passed = false;
  std::string detail;  // the first failure (trial, component/limb/coefficient, values, error) or a summary
};

// Runs the suite against `backend`. Never throws for a backend failure: an
// exception from the backend (or a mismatch) is a failed case.
std::vector<CaseResult> run_conformance(const std::shared_ptr<Backend>& backend, const ConformanceOptions& options);

}  // namespace fhelium::conformance
