#include "fhelium/runtime/matvec.hpp"

#include <bit>
#include <cmath>

#include "fhelium/error.hpp"

namespace fhelium::runtime {
namespace {

std::string diagonal_name(int group, int baby) {
  return "d" + std::to_string(group) + "_" + std::to_string(baby);
}

}  // namespace

std::vector<long> MatvecPlan::rotation_steps() const {
  std::vector<long> steps;
  for (int b = 1; b < baby; ++b) steps.push_back(b);
  for (int g = 1; g < giant; ++g) steps.push_back(static_cast<long>(g) * baby);
  return steps;
}

MatvecPlan plan_matvec(int size, std::size_t slots) {
  if (size < 1 || !std::has_single_bit(static_cast<unsigned>(size)) || static_cast<std::size_t>(size) > slots) {
    throw InvalidArgumentError("matvec: matrix size " + std::to_string(size) +
                               " must be a power of two between 1 and the slot count " + std::to_string(slots));
  }
  MatvecPlan plan;
  plan.size = size;
  const int log_size = std::countr_zero(static_cast<unsigned>(size));
  plan.baby = 1 << ((log_size + 1) / 2);
  plan.giant = size / plan.baby;
  return plan;
}

Program matvec_program(const MatvecPlan& plan) {
  ProgramBuilder b("matvec" + std::to_string(plan.size));
  const ValueRef x = b.input("x");
  std::vector<ValueRef> rotated{x};
  if (plan.baby > 1) {
    std::vector<long> steps;
    for (int i = 1; i < plan.baby; ++i) steps.push_back(i);
    for (ValueRef r : b.rotate_hoisted(x, steps)) rotated.push_back(r);
  }
  std::vector<ValueRef> groups;
  for (int g = 0; g < plan.giant; ++g) {
    std::vector<ValueRef> terms;
    for (int i = 0; i < plan.baby; ++i) {
      terms.push_back(b.multiply_plain(rotated[static_cast<std::size_t>(i)], b.constant(diagonal_name(g, i))));
    }
    ValueRef group = terms.size() == 1 ? terms[0] : b.sum(terms);
    groups.push_back(g == 0 ? group : b.rotate(group, static_cast<long>(g) * plan.baby));
  }
  b.output("y", b.rescale(groups.size() == 1 ? groups[0] : b.sum(groups)));
  return b.build();
}

std::map<std::string, std::vector<std::complex<double>>> matvec_constants(
    const MatvecPlan& plan, const std::vector<std::vector<double>>& matrix, std::size_t slots) {
  const auto d = static_cast<std::size_t>(plan.size);
  if (matrix.size() != d) {
    throw InvalidArgumentError("matvec: the matrix has " + std::to_string(matrix.size()) + " rows, expected " +
                               std::to_string(d));
  }
  for (std::size_t r = 0; r < d; ++r) {
    if (matrix[r].size() != d) {
      throw InvalidArgumentError("matvec: matrix row " + std::to_string(r) + " has " +
                                 std::to_string(matrix[r].size()) + " entries, expected " + std::to_string(d));
    }
  }
  std::map<std::string, std::vector<std::complex<double>>> constants;
  for (int g = 0; g < plan.giant; ++g) {
    for (int i = 0; i < plan.baby; ++i) {
      const std::size_t k = static_cast<std::size_t>(g * plan.baby + i);   // diagonal index
      const std::size_t shift = static_cast<std::size_t>(g * plan.baby);  // pre-rotation
      std::vector<std::complex<double>> values(slots);
      // diag_k[j] = A[j][(j + k) mod d], packed cyclically, then rotated right by `shift`.
      for (std::size_t j = 0; j < slots; ++j) {
        const std::size_t row = (j + d - shift % d) % d;
        values[j] = matrix[row][(row + k) % d];
      }
      constants.emplace(diagonal_name(g, i), std::move(values));
    }
  }
  return constants;
}

std::vector<std::complex<double>> pack_cyclic(const std::vector<double>& x, std::size_t slots) {
  std::vector<std::complex<double>> packed(slots);
  for (std::size_t j = 0; j < slots; ++j) packed[j] = x[j % x.size()];
  return packed;
}

std::vector<double> clear_matvec(const std::vector<std::vector<double>>& matrix, const std::vector<double>& x) {
  std::vector<double> y(matrix.size(), 0.0);
  for (std::size_t r = 0; r < matrix.size(); ++r) {
    for (std::size_t c = 0; c < x.size(); ++c) y[r] += matrix[r][c] * x[c];
  }
  return y;
}

}  // namespace fhelium::runtime
