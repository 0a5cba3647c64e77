#include "rational_chain.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <string>

#include "fhelium/error.hpp"
#include "fhelium/primes.hpp"

namespace fhelium::rational_chain {
namespace {

// Level 3g + r holds (mains, terminals): r = 0: (2 + 4g, 0); r = 1: (2 + 4g, 2); r = 2: (4 + 4g, 1).
LevelBasis basis(int level) {
  const int g = level / 3;
  const int r = level % 3;
  const int mains = r == 2 ? 4 + 4 * g : 2 + 4 * g;
  const int terminals = r == 0 ? 0 : (r == 1 ? 2 : 1);
  return {terminal_count - terminals, terminals + mains};
}

// Primes 1 mod 2N in [lower, upper), ascending.
std::vector<u64> ntt_primes_between(std::uint64_t ring_degree, u64 lower, u64 upper) {
  const u64 step = 2 * ring_degree;
  std::vector<u64> out;
  for (u64 q = (lower / step + 1) * step + 1; q < upper; q += step) {
    if (is_prime(q)) out.push_back(q);
  }
  return out;
}

// The unused prime of `pool` nearest `target` (in ratio), or 0.
u64 nearest_unused(const std::vector<u64>& pool, const std::set<u64>& used, double target) {
  const auto it = std::lower_bound(pool.begin(), pool.end(), static_cast<u64>(std::max(target, 0.0)));
  u64 best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  const auto consider = [&](u64 q) {
    const double error = std::fabs(std::log2(static_cast<double>(q) / target));
    if (!used.count(q) && error < best_error) {
      best = q;
      best_error = error;
    }
  };
  for (auto up = it; up != pool.end() && std::distance(it, up) < 64; ++up) consider(*up);
  for (auto down = it; down != pool.begin() && std::distance(down, it) < 64;) consider(*--down);
  return best;
}

}  // namespace

int top_level(int mains) { return 3 * (mains - 2) / 4 + 1; }

std::vector<LevelBasis> levels(int mains, int wide_levels) {
  if (mains == 0) return {{0, terminal_count}};  // level 0 only
  std::vector<LevelBasis> out;
  for (int level = 0; level <= top_level(mains); ++level) out.push_back(basis(level));
  for (int k = 1; k <= wide_levels; ++k) out.push_back({0, terminal_count + mains + 2 * k});
  return out;
}

std::vector<u64> choose_primes(std::uint64_t ring_degree, double scale, int mains, int wide_levels,
                               const std::vector<u64>& exclude) {
  std::set<u64> used(exclude.begin(), exclude.end());
  const auto main_pool = ntt_primes_between(ring_degree, u64{1} << 28, u64{1} << 31);
  std::vector<u64> chosen;
  // The largest unused prime below `limit`.
  const auto take_below = [&](u64 limit) {
    auto it = std::lower_bound(main_pool.begin(), main_pool.end(), limit);
    while (it != main_pool.begin()) {
      const u64 q = *--it;
      if (!used.count(q)) {
        used.insert(q);
        chosen.push_back(q);
        return;
      }
    }
    throw ParameterError("too few primes 1 mod " + std::to_string(2 * ring_degree) +
                         " below 2^30 for the rational chain");
  };
  if (mains == 0) {  // level 0 only: its two primes
    take_below(u64{1} << 30);
    take_below(u64{1} << 30);
    return chosen;
  }
  const double log_scale = std::log2(scale);
  // A main pair must reach scale x t below 2^62: terminals below 2^62 / scale.
  const double terminal_limit = std::min(std::ldexp(1.0, 31), std::ldexp(1.0, 62) / scale);
  const auto terminal_pool = ntt_primes_between(ring_degree, 2 * ring_degree, static_cast<u64>(terminal_limit));
  u64 t0 = 0;
  u64 t1 = 0;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < terminal_pool.size(); ++i) {
    for (std::size_t j = i + 1; j < terminal_pool.size(); ++j) {
      const u64 a = terminal_pool[i];
      const u64 b = terminal_pool[j];
      const double error = std::fabs(std::log2(static_cast<double>(a)) + std::log2(static_cast<double>(b)) - log_scale);
      if (!used.count(a) && !used.count(b) && error < best) {
        best = error;
        t0 = a;
        t1 = b;
      }
    }
  }
  if (t0 == 0 || best > 1.0) {
    throw ParameterError("the rational chain needs two primes 1 mod " + std::to_string(2 * ring_degree) +
                         " whose product is within a bit of the scale 2^" + std::to_string(log_scale) +
                         ": ring degree " + std::to_string(ring_degree) + " has none");
  }
  used.insert(t0);
  used.insert(t1);
  chosen = {t1, t0};
  take_below(u64{1} << 30);
  take_below(u64{1} << 30);

  // Upward from level 0 at the scale: level l's pair makes D / A = s^2 / s_(l-1).
  double below = scale;  // the nominal scale of the level below
  for (int level = 1; level <= top_level(mains); ++level) {
    double divisor = static_cast<double>(t0) * static_cast<double>(t1);
    if (level % 3 != 1) {
      const u64 added = level % 3 == 2 ? t1 : t0;
      const double target = scale * scale / below * static_cast<double>(added);
      // The best of the pairs around sqrt(target).
      u64 best_a = 0;
      u64 best_b = 0;
      double best_error = std::numeric_limits<double>::infinity();
      auto it = std::lower_bound(main_pool.begin(), main_pool.end(), static_cast<u64>(std::sqrt(target)));
      for (int tries = 0; tries < 16 && it != main_pool.begin();) {
        const u64 a = *--it;
        if (used.count(a)) continue;
        ++tries;
        used.insert(a);
        const u64 b = nearest_unused(main_pool, used, target / static_cast<double>(a));
        used.erase(a);
        if (b == 0) continue;
        const double error = std::fabs(std::log2(static_cast<double>(a) * static_cast<double>(b) / target));
        if (error < best_error) {
          best_error = error;
          best_a = a;
          best_b = b;
        }
      }
      if (best_a == 0) {
        throw ParameterError("too few primes 1 mod " + std::to_string(2 * ring_degree) +
                             " below 2^31 for the rational chain's level " + std::to_string(level));
      }
      used.insert(best_a);
      used.insert(best_b);
      chosen.push_back(best_a);
      chosen.push_back(best_b);
      divisor = static_cast<double>(best_a) * static_cast<double>(best_b) / static_cast<double>(added);
    }
    below = std::sqrt(below * divisor);
  }

  // Wide levels: the largest unused prime below 2^30 and its nearest partner
  // to 2^61, below 2^31 (so each pair keeps one prime on the NTT's lazy
  // path, as before): the 64-bit family's 61-bit primes, so that
  // bootstrapping works at the same scale in both.
  const double wide_scale = std::ldexp(1.0, wide_level_bits);
  for (int k = 0; k < wide_levels; ++k) {
    auto it = std::lower_bound(main_pool.begin(), main_pool.end(), u64{1} << 30);
    while (it != main_pool.begin() && used.count(*std::prev(it))) --it;
    const u64 a = it == main_pool.begin() ? 0 : *std::prev(it);
    if (a != 0) used.insert(a);
    const u64 b = a == 0 ? 0 : nearest_unused(main_pool, used, wide_scale / static_cast<double>(a));
    if (b == 0 || std::fabs(std::log2(static_cast<double>(a) * static_cast<double>(b) / wide_scale)) > 0.5) {
      throw ParameterError("too few primes 1 mod " + std::to_string(2 * ring_degree) +
                           " below 2^31 for the wide level " + std::to_string(k + 1) +
                           " of the 32-bit chain: no unused pair within half a bit of 2^61");
    }
    used.insert(b);
    chosen.push_back(a);
    chosen.push_back(b);
  }
  return chosen;
}

}  // namespace fhelium::rational_chain
