// NTT-friendly primes (q = 1 mod 2N), generated deterministically.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

namespace fhelium {

// Deterministic Miller-Rabin for 64-bit integers.
bool is_prime(std::uint64_t n);

// For each requested bit size b (in order), the largest prime q < 2^b with
// q = 1 mod 2N that is not in `exclude` nor chosen earlier. Bit sizes must be
// in [20, 61]. Throws ParameterError when the range holds too few primes.
std::vector<std::uint64_t> generate_ntt_primes(const std::vector<int>& bit_sizes,
                                               std::uint64_t ring_degree,
                                               std::set<std::uint64_t> exclude = {});

// Smallest primitive 2N-th root of unity modulo q (q = 1 mod 2N).
std::uint64_t minimal_primitive_root(std::uint64_t two_n, std::uint64_t q);

}  // namespace fhelium
