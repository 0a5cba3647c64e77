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
// A third family transforms random residues (each limb's first 64
// coefficients the largest ones, 0..q-1 otherwise) forward and inverse on
// poisoned outputs with guard limbs, at ring sizes and prime sizes of its own.
//
// Case names: "N4096/L3/K2/level3/rotate(5)" (ring degree, levels, special
// primes, level of the inputs, operation), "N8192/L3/K2/B44/level3/add"
// (every prime of 44 bits), "slots8192_scale40_levels7/level3/add" (a
// preset); direct calls are "direct:OP"; transforms are
// "N1024/L2/K1/B44/limbs3/transform:to_ntt".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fhelium/backend/backend.hpp"

namespace fhelium::conformance {

// Levels in ConformanceOptions::levels: a level number, or one of these.
inline constexpr int top_level = -1;     // the parameter set's top level
inline constexpr int middle_level = -2;  // its top level / 2, rounded down

struct ConformanceOptions {
  // Ring sizes (log2 N) of the three default parameter sets: a 55-bit q_0,
  // 3, 4 or 6 levels of 40 bits, 1, 2 or 3 special primes of 55 bits.
  std::vector<int> log_n = {12, 13, 14};
  // Named parameter sets, run instead of the default ones when not empty: a
  // preset ("slots8192_scale40_levels7": fhelium::preset_names()), a shape
  // "N13_L6_K4" (2^13, a 55-bit q_0, 6 levels of 40 bits, 4 special primes of
  // 55 bits) or "N13_L3_K2_B44" (the same with every q and p prime of 44
  // bits, scale 2^40 or 2^(B-4) if smaller). An unknown name throws.
  std::vector<std::string> params;
  // Levels tested in each parameter set: numbers, top_level, middle_level.
  // Empty: top, middle and 1 (0 in the first default set, and in a set with
  // no level 1). A level above a set's top level throws.
  std::vector<int> levels;
  bool operations = true;  // the Engine and direct cases; false: the transform family only
  // The transform family at these ring sizes (log2 N, 10..17; empty: not
  // run), for each prime size here: 3 and 1 limbs of small_params(log_n,
  // 2, 1) with every prime of that many bits (0 or empty: its own primes,
  // 55, 40 and 40 bits).
  std::vector<int> transform_log_n;
  std::vector<int> transform_bits;
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
// exception from the backend (or a mismatch) is a failed case. Throws
// InvalidArgumentError for options that name no parameter set or level.
std::vector<CaseResult> run_conformance(const std::shared_ptr<Backend>& backend, const ConformanceOptions& options);

// Throws InvalidArgumentError where run_conformance would (options that name
// no parameter set, level, ring size or prime size); checks nothing else.
void check_options(const ConformanceOptions& options);

// "top", "middle", "lowest" (0) or a level number, for ConformanceOptions::levels;
// throws InvalidArgumentError for anything else.
int parse_level(const std::string& text);

}  // namespace fhelium::conformance
