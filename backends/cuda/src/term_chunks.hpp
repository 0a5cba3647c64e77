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
