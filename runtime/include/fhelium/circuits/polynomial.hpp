// p(x) for a polynomial in the monomial or the Chebyshev basis, with the
// fewest levels and an exact output scale.
//
// Depth: ceil(log2(d + 1)) levels for degree d, plus one for a Chebyshev
// polynomial on an interval other than [-1, 1] (the map of [a, b] onto
// [-1, 1] is a multiplication by a scalar). Method: baby-step giant-step
// (Paterson-Stockmeyer style): the powers x^1 .. x^(k-1) (or T_1 .. T_(k-1))
// and x^(2^i) for k = 2^ceil(D/2); p = q * x^m + r with m the largest power
// of two <= deg p, recursively, until a part is a linear combination of the
// baby powers. Every part is computed at the level and scale that make the
// next product land exactly on the level and scale its parent needs, so the
// result has exactly the requested scale (x's scale by default). For the
// Chebyshev basis, the division uses T_i = 2 T_m T_(i-m) - T_(2m-i).
//
// Keys: relinearization (degree >= 2). Coefficients of absolute value at
// most the threshold are skipped.
#pragma once

#include <complex>
#include <functional>
#include <optional>
#include <vector>

#include "fhelium/runtime/program.hpp"

namespace fhelium::circuits {

using runtime::ProgramBuilder;
using runtime::ValueRef;

enum class PolynomialBasis { monomial, chebyshev };

struct Polynomial {
  PolynomialBasis basis = PolynomialBasis::monomial;
  std::vector<double> coefficients;  // c_0 .. c_d
  // Chebyshev: the interval [a, b] that is mapped onto [-1, 1].
  double a = -1.0;
  double b = 1.0;

  // The Chebyshev interpolant of f of this degree on [a, b] (at the
  // Chebyshev nodes of the first kind).
  static Polynomial chebyshev_interpolant(const std::function<double(double)>& f, int degree, double a, double b);

  // The highest index whose coefficient's absolute value exceeds `threshold`
  // (0 for a constant).
  int degree(double threshold = 0.0) const;
  // p(x) in double precision (Horner, or Clenshaw on the mapped argument).
  std::complex<double> evaluate(std::complex<double> x) const;
};

struct PolynomialOptions {
  double threshold = 0.0;              // |c_i| <= threshold: skipped
  std::optional<double> output_scale;  // default: x's scale
};

// The levels evaluate_polynomial consumes.
int polynomial_depth(const Polynomial& p, double threshold = 0.0);

// p(x) at level(x) - polynomial_depth(p) with exactly the output scale.
// InvalidArgumentError for an empty or constant polynomial or a bad interval;
// StateError when x has fewer levels than the depth.
ValueRef evaluate_polynomial(ProgramBuilder& b, ValueRef x, const Polynomial& p, const PolynomialOptions& options = {});

}  // namespace fhelium::circuits
