#include "fhelium/circuits/special_fft.hpp"

#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "fhelium/error.hpp"

namespace fhelium::circuits {
namespace {

void check_shape(std::size_t ring_degree, std::size_t slots, std::size_t len) {
  if (!std::has_single_bit(ring_degree) || !std::has_single_bit(slots) || slots > ring_degree / 2 ||
      !std::has_single_bit(len) || len < 2 || len > slots) {
    throw InvalidArgumentError("special FFT stage: ring degree " + std::to_string(ring_degree) + ", " +
                               std::to_string(slots) + " slots, length " + std::to_string(len) +
                               "; expected powers of two with 2 <= length <= slots <= ring degree / 2");
  }
}

// The twiddles of a stage of length len: exp(2 pi i (5^j mod 4len) / 4len)
// for butterfly j < len / 2.
std::vector<std::complex<double>> twiddles(std::size_t ring_degree, std::size_t len) {
  const std::uint64_t m = 2 * ring_degree;
  const std::uint64_t quad = 4 * len;
  std::vector<std::complex<double>> t(len / 2);
  std::uint64_t power = 1;
  for (auto& w : t) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(power & (quad - 1)) / static_cast<double>(quad);
    w = {std::cos(angle), std::sin(angle)};
    power = (power * 5) & (m - 1);
  }
  return t;
}

Diagonals zero_diagonals(std::size_t slots, std::initializer_list<long> indices) {
  Diagonals d;
  for (long k : indices) d.emplace(k, Slots(slots));
  return d;
}

// One stage's entries for the butterfly with twiddle t: the upper half's
// diagonals 0 and +half, the lower half's 0 and -half.
struct Butterfly {
  std::complex<double> upper_same, upper_next, lower_same, lower_previous;
};

template <class Entries>
Diagonals butterflies(std::size_t ring_degree, std::size_t slots, std::size_t len, Entries entries) {
  check_shape(ring_degree, slots, len);
  const std::size_t half = len / 2;
  const long up = static_cast<long>(half);
  const long down = static_cast<long>((slots - half) % slots);
  Diagonals d = zero_diagonals(slots, {0, up, down});
  const std::vector<std::complex<double>> t = twiddles(ring_degree, len);
  for (std::size_t x = 0; x < slots; ++x) {
    const std::size_t j = x % len;
    const Butterfly b = entries(t[j % half]);
    if (j < half) {
      d[0][x] = b.upper_same;
      d[up][x] = b.upper_next;
    } else {
      d[0][x] = b.lower_same;
      d[down][x] = b.lower_previous;
    }
  }
  return d;
}

// Groups consecutive stages (given in the order they apply) into `groups`
// products; the earlier groups take the extra stages.
std::vector<Diagonals> grouped(const std::vector<Diagonals>& stages, int groups, std::size_t slots,
                               std::complex<double> factor) {
  const int count = static_cast<int>(stages.size());
  if (groups < 1 || groups > count) {
    throw InvalidArgumentError("special FFT: " + std::to_string(groups) + " groups for " + std::to_string(count) +
                               " stages, expected 1.." + std::to_string(count));
  }
  std::vector<Diagonals> out;
  int next = 0;
  for (int g = 0; g < groups; ++g) {
    const int size = count / groups + (g < count % groups ? 1 : 0);
    Diagonals m = stages[static_cast<std::size_t>(next++)];
    for (int s = 1; s < size; ++s) m = compose(stages[static_cast<std::size_t>(next++)], m, slots);
    out.push_back(std::move(m));
  }
  out.front() = scaled(std::move(out.front()), factor);
  return out;
}

}  // namespace

Diagonals special_fft_stage(std::size_t ring_degree, std::size_t slots, std::size_t len) {
  // Upper half: out[x] = v[x] + t_j v[x + half]; lower: out[x] = v[x - half] - t_j v[x].
  return butterflies(ring_degree, slots, len, [](std::complex<double> t) { return Butterfly{1.0, t, -t, 1.0}; });
}

Diagonals special_fft_inverse_stage(std::size_t ring_degree, std::size_t slots, std::size_t len) {
  // Upper: a = (u + w) / 2; lower: b = (u - w) / (2 t_j).
  return butterflies(ring_degree, slots, len, [](std::complex<double> t) {
    const std::complex<double> inverse = std::conj(t) * 0.5;
    return Butterfly{0.5, 0.5, -inverse, inverse};
  });
}

Diagonals compose(const Diagonals& after, const Diagonals& before, std::size_t slots) {
  Diagonals out;
  const long n = static_cast<long>(slots);
  for (const auto& [a, da] : after) {
    for (const auto& [b, db] : before) {
      Slots& dc = out.try_emplace((a + b) % n, Slots(slots)).first->second;
      for (std::size_t x = 0; x < slots; ++x) dc[x] += da[x] * db[(x + static_cast<std::size_t>(a)) % slots];
    }
  }
  std::erase_if(out, [](const auto& entry) {
    for (const auto& v : entry.second) {
      if (v != 0.0) return false;
    }
    return true;
  });
  return out;
}

Diagonals scaled(Diagonals m, std::complex<double> factor) {
  for (auto& [k, d] : m) {
    for (auto& v : d) v *= factor;
  }
  return m;
}

std::vector<Diagonals> coeff_to_slot_matrices(std::size_t ring_degree, std::size_t slots, int groups,
                                              std::complex<double> factor) {
  std::vector<Diagonals> stages;
  for (std::size_t len = slots; len >= 2; len /= 2)
    stages.push_back(special_fft_inverse_stage(ring_degree, slots, len));
  return grouped(stages, groups, slots, factor);
}

std::vector<Diagonals> slot_to_coeff_matrices(std::size_t ring_degree, std::size_t slots, int groups,
                                              std::complex<double> factor) {
  std::vector<Diagonals> stages;
  for (std::size_t len = 2; len <= slots; len *= 2) stages.push_back(special_fft_stage(ring_degree, slots, len));
  return grouped(stages, groups, slots, factor);
}

}  // namespace fhelium::circuits
