// A sum's terms in launches of at most Count terms each: SumTerms travels
// by value as a kernel parameter (2 x Count pointers, far below the 4 KB
// limit); p[0] is null when there are no plaintexts. `launch(terms,
// accumulate)` gets accumulate = true from the second launch on (it adds
// to what the earlier ones wrote).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <span>

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

}  // namespace fhelium::cuda
