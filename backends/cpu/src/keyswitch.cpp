#include "keyswitch.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "fhelium/backend/limb_kernels.hpp"
#include "parallel.hpp"

namespace fhelium::cpu {
namespace {

constexpr std::size_t conversion_chunk = 1024;

// Digit j of level l covers the level's limbs [begin, end).
struct DigitRange {
  int begin;
  int end;
};

DigitRange digit_range(const Context& c, int level, int j) {
  const auto [begin, end] = c.digit_limbs(level, j);
  return {begin, end};
}

int q_limbs_of(const Context& c, int level) { return c.level_basis(level).count; }

// Position of slot s (the level's Q limbs, then P primes) inside extended digit
// j, whose layout is the converter's target order followed by the digit's own limbs.
int position_in_digit(int slot, DigitRange r, int q_limbs, int specials) {
  const int own = r.end - r.begin;
  const int targets = q_limbs - own + specials;
  if (slot >= r.begin && slot < r.end) return targets + (slot - r.begin);
  return slot < r.begin ? slot : slot - own;
}

// The key's digit of the level's digit j.
std::size_t key_digit(const Context& c, int level, int j) {
  return static_cast<std::size_t>(c.key_switch(level).first_digit + j);
}

// acc0/acc1[k] = sum_j ext_j[index(k)] * kb_j[k] / ka_j[k] mod q. Blocks of
// coefficients keep the 128-bit sums in L1 and read three streams at a time.
template <class Index>
void multiply_accumulate(std::size_t n, int digits, const u64* const* ext, const u64* const* kb, const u64* const* ka,
                         const Modulus& q, u64* acc0, u64* acc1, Index index) {
  constexpr std::size_t block = 512;
  u128 sum0[block];
  u128 sum1[block];
  for (std::size_t k0 = 0; k0 < n; k0 += block) {
    const std::size_t len = std::min(block, n - k0);
    std::fill_n(sum0, len, u128{0});
    std::fill_n(sum1, len, u128{0});
    for (int j = 0; j < digits; ++j) {
      const auto d = static_cast<std::size_t>(j);
      const u64* e = ext[d];
      const u64* b = kb[d] + k0;
      const u64* a = ka[d] + k0;
      for (std::size_t k = 0; k < len; ++k) {
        const u64 x = e[index(k0 + k)];
        sum0[k] += static_cast<u128>(x) * b[k];
        sum1[k] += static_cast<u128>(x) * a[k];
      }
      // Residues are below 2^61 (primes of at most 61 bits), products below
      // 2^122: folding every 16 digits keeps the sums below 2^127.
      if ((j & 15) == 15) {
        for (std::size_t k = 0; k < len; ++k) {
          sum0[k] = reduce128(sum0[k], q);
          sum1[k] = reduce128(sum1[k], q);
        }
      }
    }
    for (std::size_t k = 0; k < len; ++k) {
      acc0[k0 + k] = reduce128(sum0[k], q);
      acc1[k0 + k] = reduce128(sum1[k], q);
    }
  }
}

// out = in(X^g) for one limb in the coefficient domain: coefficient i moves
// to i g mod 2N, negated when that is N or more (X^N = -1).
template <class W>
void apply_galois_to_coefficients(const W* in, W* out, std::size_t n, std::uint32_t galois_element, u64 q) {
  const std::size_t mask = 2 * n - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t image = (i * galois_element) & mask;
    if (image < n) {
      out[image] = in[i];
    } else {
      out[image - n] = static_cast<W>(neg_mod(in[i], q));
    }
  }
}

// Key slots per thread for the fused key switch. Estimated cost of a slot:
// 1 per transform on the floating-point NTT, 2 on the integer one (primes of
// 44 bits and more), 0.8 per digit's memory-bound multiply-accumulate. Two
// threads: the best split over all subsets (a 60-bit Q slot and the P slot
// are each about 1.5 light slots, so a 5/4 split by count is off by 10 %);
// more threads: longest first to the least loaded.
std::vector<std::vector<int>> assign_slots(const Context& c, int level, int threads) {
  const int slots = q_limbs_of(c, level) + c.special_count();
  const int digits = c.key_switch(level).digits;
  std::vector<double> cost(static_cast<std::size_t>(slots));
  for (int s = 0; s < slots; ++s) {
    const int converted = s < q_limbs_of(c, level) ? digits - 1 : digits;
    const double transform = c.ntt(c.key_limb(level, s)).floating_point() ? 1.0 : 2.0;
    cost[static_cast<std::size_t>(s)] = converted * transform + 0.8 * digits;
  }
  std::vector<std::vector<int>> lists(static_cast<std::size_t>(threads));
  if (threads == 2 && slots <= 20) {
    double total = 0;
    for (double x : cost) total += x;
    unsigned best = 0;
    double best_load = total;
    for (unsigned mask = 0; mask < (1u << slots); ++mask) {
      double load = 0;
      for (int s = 0; s < slots; ++s) load += (mask >> s & 1u) ? cost[static_cast<std::size_t>(s)] : 0.0;
      if (std::max(load, total - load) < best_load) {
        best_load = std::max(load, total - load);
        best = mask;
      }
    }
    for (int s = 0; s < slots; ++s) lists[(best >> s) & 1u].push_back(s);
    return lists;
  }
  std::vector<int> order(static_cast<std::size_t>(slots));
  for (int s = 0; s < slots; ++s) order[static_cast<std::size_t>(s)] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cost[static_cast<std::size_t>(a)] > cost[static_cast<std::size_t>(b)]; });
  std::vector<double> load(lists.size(), 0.0);
  for (int s : order) {
    const auto t = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    lists[t].push_back(s);
    load[t] += cost[static_cast<std::size_t>(s)];
  }
  return lists;
}

template <class W>
void convert_parallel(const CpuContext& ctx, const BasisConverter& converter, const W* in, W* out) {
  const std::size_t n = ctx.context().ring_degree();
  const std::size_t chunks = (n + conversion_chunk - 1) / conversion_chunk;
  parallel_for(ctx.threads(), chunks, [&](std::size_t c) {
    converter.convert(in, out, n, c * conversion_chunk, std::min(n, (c + 1) * conversion_chunk));
  });
}

// The level's Q limbs of d in the coefficient domain, in the workspace.
template <class W>
W* to_coefficients(const CpuContext& ctx, const W* d, int level) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  W* coefficients = scratch<W>(ctx.workspace().coefficients);
  parallel_for(ctx.threads(), static_cast<std::size_t>(q_limbs_of(c, level)), [&](std::size_t i) {
    std::memcpy(coefficients + i * n, d + i * n, n * sizeof(W));
    c.ntt(c.key_limb(level, static_cast<int>(i))).inverse(coefficients + i * n);
  });
  return coefficients;
}

// The fused ModUp and inner product (64-bit words, one prime per digit).
void mod_up_inner_product_fused(const CpuContext& ctx, const u64* d, int level, const KeyArg& key,
                                std::uint32_t galois_element, const std::uint32_t* perm);

}  // namespace

template <class W>
void mod_up(const CpuContext& ctx, const W* d, int level, std::uint32_t galois_element, const std::uint32_t* perm) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  const int specials = c.special_count();
  const int slots = q_limbs_of(c, level) + specials;
  const KeySwitchLevel& ks = c.key_switch(level);
  KeySwitchWorkspace& ws = ctx.workspace();
  W* coefficients = to_coefficients(ctx, d, level);
  W* extended = scratch<W>(ws.extended);
  if (perm) {  // X -> X^g on the coefficients, so every converted limb is rotated
    W* rotated = scratch<W>(ws.converted);
    parallel_for(ctx.threads(), static_cast<std::size_t>(q_limbs_of(c, level)), [&](std::size_t i) {
      apply_galois_to_coefficients(coefficients + i * n, rotated + i * n, n, galois_element,
                                   c.level_modulus(level, static_cast<int>(i)).value);
    });
    coefficients = rotated;
  }

  // Digit by digit, each converted limb is transformed while the digit's
  // limbs are still in cache.
  for (int j = 0; j < ks.digits; ++j) {
    const DigitRange r = digit_range(c, level, j);
    const int own = r.end - r.begin;
    W* digit = extended + static_cast<std::size_t>(j) * static_cast<std::size_t>(slots) * n;
    convert_parallel(ctx, ks.mod_up[static_cast<std::size_t>(j)], coefficients + static_cast<std::size_t>(r.begin) * n,
                     digit);
    W* own_limbs = digit + static_cast<std::size_t>(slots - own) * n;
    const W* source = d + static_cast<std::size_t>(r.begin) * n;
    if (perm) {  // the digit's own limbs, in the NTT domain, through perm
      parallel_for(ctx.threads(), static_cast<std::size_t>(own), [&](std::size_t i) {
        for (std::size_t k = 0; k < n; ++k) own_limbs[i * n + k] = source[i * n + perm[k]];
      });
    } else {
      std::memcpy(own_limbs, source, static_cast<std::size_t>(own) * n * sizeof(W));
    }
    parallel_for(ctx.threads(), static_cast<std::size_t>(slots - own), [&](std::size_t t) {
      const int target = static_cast<int>(t);
      const int slot = target < r.begin ? target : target + own;
      c.ntt(c.key_limb(level, slot)).forward(digit + t * n);
    });
  }
}

template <class W>
void mod_up_inner_product(const CpuContext& ctx, const W* d, int level, const KeyArg& key, std::uint32_t galois_element,
                          const std::uint32_t* perm) {
  const Context& c = ctx.context();
  // Fused only where it wins: one prime per digit (a digit of several primes
  // would redo its scaled residues per target) and a slot's 128-bit sums
  // within L2 (2 x 2^14 x 16 bytes); elsewhere the digits are stored.
  if constexpr (sizeof(W) == 8) {
    if (c.digit_size() == 1 && c.ring_degree() <= (std::size_t{1} << 14)) {
      mod_up_inner_product_fused(ctx, d, level, key, galois_element, perm);
      return;
    }
  }
  if constexpr (sizeof(W) == 4) {
    mod_up(ctx, d, level, galois_element, perm);  // d rotated once instead of every extended limb
    inner_product<W>(ctx, level, key, nullptr);
  } else {
    mod_up(ctx, d, level);  // the extended limbs read through perm, as the cuda backend does
    inner_product<W>(ctx, level, key, perm);
  }
}

namespace {

void mod_up_inner_product_fused(const CpuContext& ctx, const u64* d, int level, const KeyArg& key,
                                std::uint32_t galois_element, const std::uint32_t* perm) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  const int slots = q_limbs_of(c, level) + c.special_count();
  const KeySwitchLevel& ks = c.key_switch(level);
  const std::size_t key_limbs = static_cast<std::size_t>(c.key_limbs());
  KeySwitchWorkspace& ws = ctx.workspace();
  const u64* key_words = words(key);
  const u64* coefficients = to_coefficients(ctx, d, level);
  if (perm) {  // X -> X^g on the coefficients: every converted limb is then rotated
    u64* rotated = ws.converted.data();
    parallel_for(ctx.threads(), static_cast<std::size_t>(q_limbs_of(c, level)), [&](std::size_t i) {
      apply_galois_to_coefficients(coefficients + i * n, rotated + i * n, n, galois_element,
                                   c.level_modulus(level, static_cast<int>(i)).value);
    });
    coefficients = rotated;
  }

  const auto multiply_slot = [&](int thread, int slot) {
    const auto s = static_cast<std::size_t>(slot);
    const int key_limb = c.key_limb(level, slot);
    const Modulus& q = c.key_modulus(key_limb);
    // This thread's limb and 128-bit sums (L2-sized at N = 2^14).
    u64* limb = ws.slot_scratch.data() + static_cast<std::size_t>(thread) * 5 * n;
    auto* sum0 = reinterpret_cast<u128*>(limb + n);
    u128* sum1 = sum0 + n;
    std::fill_n(sum0, 2 * n, u128{0});
    for (int j = 0; j < ks.digits; ++j) {
      const DigitRange r = digit_range(c, level, j);
      const u64* x = d + s * n;  // the digit's own limbs are d's (through perm)
      if (slot >= r.begin && slot < r.end && perm) {
        for (std::size_t k = 0; k < n; ++k) limb[k] = x[perm[k]];
        x = limb;
      } else if (slot < r.begin || slot >= r.end) {
        const int target = slot < r.begin ? slot : slot - (r.end - r.begin);
        ks.mod_up[static_cast<std::size_t>(j)].convert_one(coefficients + static_cast<std::size_t>(r.begin) * n, limb,
                                                           n, static_cast<std::size_t>(target), 0, n);
        c.ntt(key_limb).forward(limb);
        x = limb;
      }
      const u64* kb = key_words + (key_digit(c, level, j) * 2 * key_limbs + static_cast<std::size_t>(key_limb)) * n;
      const u64* ka = kb + key_limbs * n;
      for (std::size_t k = 0; k < n; ++k) {
        sum0[k] += static_cast<u128>(x[k]) * kb[k];
        sum1[k] += static_cast<u128>(x[k]) * ka[k];
      }
      if ((j & 15) == 15) {  // keeps the sums below 2^127, as multiply_accumulate does
        for (std::size_t k = 0; k < 2 * n; ++k) sum0[k] = reduce128(sum0[k], q);
      }
    }
    u64* acc0 = ws.accumulators.data() + s * n;
    u64* acc1 = ws.accumulators.data() + (static_cast<std::size_t>(slots) + s) * n;
    for (std::size_t k = 0; k < n; ++k) {
      acc0[k] = reduce128(sum0[k], q);
      acc1[k] = reduce128(sum1[k], q);
    }
  };
  const auto lists = assign_slots(c, level, ctx.threads());
  on_each_thread(ctx.threads(), [&](int thread, int team) {
    for (std::size_t list = static_cast<std::size_t>(thread); list < lists.size();
         list += static_cast<std::size_t>(team)) {
      for (int slot : lists[list]) multiply_slot(thread, slot);
    }
  });
}

}  // namespace

template <class W>
void inner_product(const CpuContext& ctx, int level, const KeyArg& key, const std::uint32_t* perm) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  const int specials = c.special_count();
  const int slots = q_limbs_of(c, level) + specials;
  const int digits = c.key_switch(level).digits;
  const std::size_t key_limbs = static_cast<std::size_t>(c.key_limbs());
  KeySwitchWorkspace& ws = ctx.workspace();
  const W* key_words = words<W>(key);
  const W* extended = scratch<W>(ws.extended);
  W* accumulators = scratch<W>(ws.accumulators);

  parallel_for(ctx.threads(), static_cast<std::size_t>(slots), [&](std::size_t s) {
    const int slot = static_cast<int>(s);
    const auto key_limb = static_cast<std::size_t>(c.key_limb(level, slot));
    const auto q = reducer<W>(c.key_modulus(static_cast<int>(key_limb)));
    W* acc0 = accumulators + s * n;
    W* acc1 = accumulators + (static_cast<std::size_t>(slots) + s) * n;
    std::vector<const W*> ext(static_cast<std::size_t>(digits)), kb(ext.size()), ka(ext.size());
    for (int j = 0; j < digits; ++j) {
      const auto pos =
          static_cast<std::size_t>(position_in_digit(slot, digit_range(c, level, j), q_limbs_of(c, level), specials));
      const auto d = static_cast<std::size_t>(j);
      ext[d] = extended + (static_cast<std::size_t>(j) * static_cast<std::size_t>(slots) + pos) * n;
      kb[d] = key_words + (key_digit(c, level, j) * 2 * key_limbs + key_limb) * n;
      ka[d] = kb[d] + key_limbs * n;
    }
    if constexpr (sizeof(W) == 4) {
      multiply_accumulate(ext.data(), kb.data(), ka.data(), digits, perm, n, q, acc0, acc1);
    } else if (perm) {
      multiply_accumulate(n, digits, ext.data(), kb.data(), ka.data(), q, acc0, acc1,
                          [perm](std::size_t k) { return perm[k]; });
    } else {
      multiply_accumulate(n, digits, ext.data(), kb.data(), ka.data(), q, acc0, acc1, [](std::size_t k) { return k; });
    }
  });
}

template <class W>
void add_accumulators(const CpuContext& ctx, int level, const W* from, W* to) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  const auto slots = static_cast<std::size_t>(q_limbs_of(c, level) + c.special_count());
  parallel_for(ctx.threads(), 2 * slots, [&](std::size_t index) {
    const int slot = static_cast<int>(index % slots);
    const u64 q = c.key_modulus(c.key_limb(level, slot)).value;
    add_residues(from + index * n, to + index * n, to + index * n, n, static_cast<W>(q));
  });
}

template <class W>
void mod_down_add(const CpuContext& ctx, int level, W* out0, const W* add0, W* out1, const W* add1) {
  const Context& c = ctx.context();
  const std::size_t n = c.ring_degree();
  const int specials = c.special_count();
  const int slots = q_limbs_of(c, level) + specials;
  const KeySwitchLevel& ks = c.key_switch(level);
  KeySwitchWorkspace& ws = ctx.workspace();

  // Both accumulators at once, so two threads always have work: the P limbs
  // to coefficients, P -> Q_l, then NTT and (acc - conv) P^-1 (+ add).
  const auto q_limbs = static_cast<std::size_t>(q_limbs_of(c, level));
  W* accumulators = scratch<W>(ws.accumulators);
  W* converted = scratch<W>(ws.converted);
  const auto accumulator = [&](std::size_t poly) { return accumulators + poly * static_cast<std::size_t>(slots) * n; };
  const auto p_limbs = static_cast<std::size_t>(specials);
  parallel_for(ctx.threads(), 2 * p_limbs, [&](std::size_t index) {
    const std::size_t poly = index / p_limbs;
    const std::size_t k = index % p_limbs;
    c.ntt(c.q_count() + static_cast<int>(k)).inverse(accumulator(poly) + (q_limbs + k) * n);
  });
  for (std::size_t poly = 0; poly < 2; ++poly) {
    convert_parallel(ctx, ks.mod_down, accumulator(poly) + q_limbs * n, converted + poly * q_limbs * n);
  }
  parallel_for(ctx.threads(), 2 * q_limbs, [&](std::size_t index) {
    const std::size_t poly = index / q_limbs;
    const std::size_t i = index % q_limbs;
    W* conv = converted + (poly * q_limbs + i) * n;
    c.ntt(c.key_limb(level, static_cast<int>(i))).forward(conv);
    const W* add = poly == 0 ? add0 : add1;
    const u64 q = c.level_modulus(level, static_cast<int>(i)).value;
    multiply_difference(accumulator(poly) + i * n, conv, (poly == 0 ? out0 : out1) + i * n, n,
                        static_cast<W>(ks.p_inverse[i]), shoup_constant<W>(ks.p_inverse[i], q, ks.p_inverse_shoup[i]),
                        static_cast<W>(q), add ? add + i * n : nullptr);
  });
}

template void mod_up(const CpuContext&, const u64*, int, std::uint32_t, const std::uint32_t*);
template void mod_up(const CpuContext&, const u32*, int, std::uint32_t, const std::uint32_t*);
template void mod_up_inner_product(const CpuContext&, const u64*, int, const KeyArg&, std::uint32_t,
                                   const std::uint32_t*);
template void mod_up_inner_product(const CpuContext&, const u32*, int, const KeyArg&, std::uint32_t,
                                   const std::uint32_t*);
template void inner_product<u64>(const CpuContext&, int, const KeyArg&, const std::uint32_t*);
template void inner_product<u32>(const CpuContext&, int, const KeyArg&, const std::uint32_t*);
template void add_accumulators(const CpuContext&, int, const u64*, u64*);
template void add_accumulators(const CpuContext&, int, const u32*, u32*);
template void mod_down_add(const CpuContext&, int, u64*, const u64*, u64*, const u64*);
template void mod_down_add(const CpuContext&, int, u32*, const u32*, u32*, const u32*);

}  // namespace fhelium::cpu
