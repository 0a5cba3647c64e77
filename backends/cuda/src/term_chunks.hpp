// A sum's terms in launches of at most Count terms each: SumTerms travels
// by value as a kernel parameter (2 x Count pointers, far below the 4 KB
// limit); p[0] is null when there are no plaintexts. `launch(terms,
// accumulate)` gets accumulate = true from the second launch on (it adds
// to what the earlier ones wrote); ConstantTerms likewise for
// sum_constant_products. `for_each_component_group` splits a
// sum's components into groups of at most three, each size a compile-time
// constant, so a kernel keeps a group's sums in registers and reads each
// plaintext residue once for all of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <type_traits>
#include <vector>

namespace fhelium::cuda {

template <class Word, int Count>
struct SumTerms {
  const Word* a[Count];
  const Word* p[Count];  // p[0] null: no plaintexts
  int count;
};

template <class Terms, class Poly, class Launch>
void for_each_term_chunk(std::span<const Poly> a, std::span<const Poly> p, Launch&& launch) {
  constexpr std::size_t per_launch = std::size(Terms{}.a);
  for (std::size_t first = 0; first < a.size(); first += per_launch) {
    Terms terms{};
    terms.count = static_cast<int>(std::min(per_launch, a.size() - first));
    for (std::size_t t = 0; t < static_cast<std::size_t>(terms.count); ++t) {
      terms.a[t] = a[first + t].data;
      terms.p[t] = p.empty() ? nullptr : p[first + t].data;
    }
    launch(terms, first > 0);
  }
}

// The terms of one sum_constant_products launch and their constants for
// limbs [first, first + limbs), by value (below the 4 KB parameter limit).
template <class Word, int Count, int Limbs>
struct ConstantTerms {
  using word = Word;
  static constexpr int max_terms = Count;
  static constexpr int max_limbs = Limbs;
  const Word* a[Count];
  Word r[Count][Limbs];  // r[t][j]: term t's constant at limb first + j
  int count;
  int first;
  int limbs;
};

// `launch(terms, accumulate)` over chunks of at most max_terms terms and
// max_limbs limbs; r holds `limbs` residues per term.
template <class Terms, class Poly, class Launch>
void for_each_constant_chunk(std::span<const Poly> a, std::span<const std::uint64_t> r, int limbs, Launch&& launch) {
  const auto per_term = static_cast<std::size_t>(limbs);
  for (int first_limb = 0; first_limb < limbs; first_limb += Terms::max_limbs) {
    for (std::size_t first = 0; first < a.size(); first += Terms::max_terms) {
      Terms terms{};
      terms.count = static_cast<int>(std::min<std::size_t>(Terms::max_terms, a.size() - first));
      terms.first = first_limb;
      terms.limbs = std::min(Terms::max_limbs, limbs - first_limb);
      for (int t = 0; t < terms.count; ++t) {
        const std::size_t term = first + static_cast<std::size_t>(t);
        terms.a[t] = a[term].data;
        for (int j = 0; j < terms.limbs; ++j) {
          terms.r[t][j] =
              static_cast<typename Terms::word>(r[term * per_term + static_cast<std::size_t>(first_limb + j)]);
        }
      }
      launch(terms, first > 0);
    }
  }
}

// The groups of one sum_product_groups launch over its distinct ciphertexts
// (inputs): group g's plaintext for input d is p[g][d], null where group g
// has no term on d. By value, below the 4 KB parameter limit.
template <class Word, int Inputs, int Groups>
struct GroupTerms {
  static constexpr int max_inputs = Inputs;
  static constexpr int max_groups = Groups;
  const Word* a[Inputs];
  const Word* p[Groups][Inputs];
  Word* out[Groups];
  int inputs;
  int groups;
};

// The distinct ciphertexts of a's terms in the order they first appear:
// the first term on each, and each term's input.
struct DistinctInputs {
  std::vector<std::size_t> first_term;
  std::vector<std::size_t> of_term;
};

template <class Poly>
DistinctInputs distinct_inputs(std::span<const Poly> a) {
  DistinctInputs d{{}, std::vector<std::size_t>(a.size())};
  for (std::size_t t = 0; t < a.size(); ++t) {
    const auto found =
        std::find_if(d.first_term.begin(), d.first_term.end(), [&](std::size_t f) { return a[f].data == a[t].data; });
    d.of_term[t] = static_cast<std::size_t>(found - d.first_term.begin());
    if (found == d.first_term.end()) d.first_term.push_back(t);
  }
  return d;
}

// True where no group (terms [ends[g - 1], ends[g])) has two terms on one
// ciphertext: the form for_each_group_chunk takes.
template <class Poly>
bool one_term_per_input(std::span<const Poly> a, std::span<const std::size_t> ends) {
  const DistinctInputs d = distinct_inputs(a);
  std::size_t first = 0;
  for (std::size_t end : ends) {
    std::vector<bool> seen(d.first_term.size());
    for (std::size_t t = first; t < end; ++t) {
      if (seen[d.of_term[t]]) return false;
      seen[d.of_term[t]] = true;
    }
    first = end;
  }
  return true;
}

// `launch(terms, accumulate)` over chunks of at most max_groups groups and
// max_inputs distinct ciphertexts, in the order they first appear;
// accumulate from an output's second chunk of inputs on. Every group has at
// most one term per ciphertext (one_term_per_input).
template <class Terms, class Poly, class Launch>
void for_each_group_chunk(std::span<const Poly> outs, std::span<const Poly> a, std::span<const Poly> p,
                          std::span<const std::size_t> ends, Launch&& launch) {
  const DistinctInputs inputs = distinct_inputs(a);
  const std::size_t count = inputs.first_term.size();
  // plain[g][d]: group g's plaintext on input d, or null.
  std::vector<std::vector<decltype(p[0].data)>> plain(outs.size(), std::vector<decltype(p[0].data)>(count));
  std::size_t first = 0;
  for (std::size_t g = 0; g < outs.size(); ++g) {
    for (std::size_t t = first; t < ends[g]; ++t) plain[g][inputs.of_term[t]] = p[t].data;
    first = ends[g];
  }
  for (std::size_t g0 = 0; g0 < outs.size(); g0 += Terms::max_groups) {
    for (std::size_t d0 = 0; d0 < count; d0 += Terms::max_inputs) {
      Terms terms{};
      terms.groups = static_cast<int>(std::min<std::size_t>(Terms::max_groups, outs.size() - g0));
      terms.inputs = static_cast<int>(std::min<std::size_t>(Terms::max_inputs, count - d0));
      for (int d = 0; d < terms.inputs; ++d) terms.a[d] = a[inputs.first_term[d0 + static_cast<std::size_t>(d)]].data;
      for (int g = 0; g < terms.groups; ++g) {
        terms.out[g] = outs[g0 + static_cast<std::size_t>(g)].data;
        for (int d = 0; d < terms.inputs; ++d) terms.p[g][d] = plain[g0 + g][d0 + static_cast<std::size_t>(d)];
      }
      launch(terms, d0 > 0);
    }
  }
}

// f(std::integral_constant<int, D>{}) for the count d in [D, Max]: a
// kernel instantiated for each count keeps per-count arrays in registers.
template <int D, int Max, class F>
void with_count(int d, F&& f) {
  if constexpr (D <= Max) {
    if (d == D) return f(std::integral_constant<int, D>{});
    with_count<D + 1, Max>(d, f);
  }
}

// launch(std::integral_constant<int, C>{}, first) for components [first, first + C).
template <class Launch>
void for_each_component_group(int components, Launch&& launch) {
  for (int first = 0; first < components; first += 3) {
    switch (std::min(3, components - first)) {
      case 1:
        launch(std::integral_constant<int, 1>{}, first);
        break;
      case 2:
        launch(std::integral_constant<int, 2>{}, first);
        break;
      default:
        launch(std::integral_constant<int, 3>{}, first);
        break;
    }
  }
}

}  // namespace fhelium::cuda
