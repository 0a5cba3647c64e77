#include "fhelium/circuits/polynomial.hpp"

#include <cmath>
#include <map>
#include <numbers>
#include <utility>

#include "circuit_internal.hpp"
#include "fhelium/circuits/slots.hpp"
#include "fhelium/error.hpp"

namespace fhelium::circuits {
namespace {

bool maps_interval(const Polynomial& p) { return p.basis == PolynomialBasis::chebyshev && (p.a != -1.0 || p.b != 1.0); }

void check(const Polynomial& p) {
  if (p.coefficients.empty()) throw InvalidArgumentError("polynomial: no coefficients, expected c_0 .. c_d");
  for (std::size_t i = 0; i < p.coefficients.size(); ++i) {
    if (!std::isfinite(p.coefficients[i])) {
      throw InvalidArgumentError("polynomial: coefficient " + std::to_string(i) + " is not finite");
    }
  }
  if (p.basis == PolynomialBasis::chebyshev && !(std::isfinite(p.a) && std::isfinite(p.b) && p.a < p.b)) {
    throw InvalidArgumentError("polynomial: interval [" + std::to_string(p.a) + ", " + std::to_string(p.b) +
                               "] is not a finite interval with a < b");
  }
}

// Evaluates one polynomial into a builder. Powers P[i] (x^i or T_i) sit at
// level top - ceil(log2 i); a part evaluated for (level t, scale T) returns a
// ciphertext at exactly that level and scale, or a constant.
class Evaluator {
 public:
  Evaluator(ProgramBuilder& b, ValueRef y, bool chebyshev, int baby)
      : b_(b), chebyshev_(chebyshev), baby_(baby), top_(b.state(y).level) {
    powers_[1] = y;
  }

  struct Part {
    std::optional<ValueRef> ciphertext;
    double constant = 0.0;
  };

  Part evaluate(std::vector<double> c, int t, double scale) {
    while (c.size() > 1 && c.back() == 0.0) c.pop_back();
    const int degree = static_cast<int>(c.size()) - 1;
    if (degree == 0) return {std::nullopt, c[0]};
    if (degree < baby_ && level_of(degree) >= t + 1) return leaf(c, t, scale);

    int m = 1;
    while (m * 2 <= degree) m *= 2;
    auto [q, r] = divide(c, m);
    const ValueRef pm = power_at(m, t + 1);
    const double q_scale = scale * detail::rescale_divisor(b_, t + 1) / b_.state(pm).scale;
    const Part quotient = evaluate(std::move(q), t + 1, q_scale);
    ValueRef product = quotient.ciphertext ? b_.multiply_relinearize_rescale(*quotient.ciphertext, pm)
                                           : b_.rescale(b_.multiply_scalar(pm, quotient.constant, q_scale));
    const Part rest = evaluate(std::move(r), t, b_.state(product).scale);
    if (rest.ciphertext) return {b_.add(product, *rest.ciphertext), 0.0};
    if (rest.constant != 0.0) product = b_.add_scalar(product, rest.constant);
    return {product, 0.0};
  }

 private:
  int level_of(int i) const { return top_ - detail::ceil_log2(static_cast<std::size_t>(i)); }

  // sum c_i P[i] + c_0 at (t, scale): every term dropped to t + 1 and
  // multiplied by c_i at the scale that lands on scale * q_(t+1), one rescale.
  Part leaf(const std::vector<double>& c, int t, double scale) {
    const double target = scale * detail::rescale_divisor(b_, t + 1);
    std::vector<ValueRef> terms;
    for (std::size_t i = 1; i < c.size(); ++i) {
      if (c[i] == 0.0) continue;
      const ValueRef p = power_at(static_cast<int>(i), t + 1);
      terms.push_back(b_.multiply_scalar(p, c[i], target / b_.state(p).scale));
    }
    ValueRef sum = terms.size() == 1 ? terms[0] : b_.sum(terms);
    if (c[0] != 0.0) sum = b_.add_scalar(sum, c[0]);
    return {b_.rescale(sum), 0.0};
  }

  // c = q * P[m] + r with deg r < m.
  std::pair<std::vector<double>, std::vector<double>> divide(const std::vector<double>& c, int m) const {
    const auto mi = static_cast<std::size_t>(m);
    std::vector<double> q(c.size() - mi, 0.0);
    std::vector<double> r(c.begin(), c.begin() + static_cast<long>(mi));
    if (!chebyshev_) {
      for (std::size_t i = mi; i < c.size(); ++i) q[i - mi] = c[i];
      return {q, r};
    }
    q[0] = c[mi];                                      // T_m = T_m T_0
    for (std::size_t i = mi + 1; i < c.size(); ++i) {  // T_i = 2 T_m T_(i-m) - T_(2m-i)
      q[i - mi] += 2.0 * c[i];
      r[2 * mi - i] -= c[i];
    }
    return {q, r};
  }

  // P[i] dropped to `level`, once per (i, level): the leaves of one level
  // share their powers' copies.
  ValueRef power_at(int i, int level) {
    const ValueRef p = power(i);
    if (b_.state(p).level == level) return p;
    const auto [found, inserted] = dropped_.try_emplace({i, level}, p);
    if (inserted) found->second = b_.drop_to_level(p, level);
    return found->second;
  }

  // P[i] at (level, scale) from its shared drop to `level`, or to level + 1
  // where a rescale sets the scale.
  ValueRef aligned_power(int i, int level, double scale) {
    const ValueState s = b_.state(power(i));  // a copy: power_at adds nodes
    if (detail::exact_scale(s.scale, scale)) return power_at(i, level);
    return align(b_, s.level > level ? power_at(i, level + 1) : power(i), level, scale);
  }

  ValueRef power(int i) {
    if (const auto found = powers_.find(i); found != powers_.end()) return found->second;
    int a = 1;
    while (a * 2 < i) a *= 2;  // largest power of two below i
    const int level = level_of(a);
    const ValueRef pa = power_at(a, level);
    const ValueRef pb = power_at(i - a, level);
    ValueRef result = b_.multiply_relinearize_rescale(pa, pb);
    if (chebyshev_) {
      // T_(a+b) = 2 T_a T_b - T_(a-b); T_(2a) = 2 T_a^2 - 1.
      result = b_.multiply_integer(result, 2);
      if (i == 2 * a) {
        result = b_.sub_scalar(result, 1.0);
      } else {
        const ValueState& s = b_.state(result);
        result = b_.sub(result, aligned_power(2 * a - i, s.level, s.scale));
      }
    }
    if (b_.state(result).level != level_of(i)) {
      throw Error("polynomial: internal error: power " + std::to_string(i) + " at level " +
                  std::to_string(b_.state(result).level) + ", expected " + std::to_string(level_of(i)));
    }
    powers_[i] = result;
    return result;
  }

  ProgramBuilder& b_;
  bool chebyshev_;
  int baby_;
  int top_;
  std::map<int, ValueRef> powers_;
  std::map<std::pair<int, int>, ValueRef> dropped_;  // (i, level) -> P[i] at that level
};

}  // namespace

Polynomial Polynomial::chebyshev_interpolant(const std::function<double(double)>& f, int degree, double a, double b) {
  if (degree < 0) throw InvalidArgumentError("chebyshev_interpolant: degree " + std::to_string(degree) + " < 0");
  const int n = degree + 1;
  std::vector<double> values(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    const double t = std::cos(std::numbers::pi * (k + 0.5) / n);
    values[static_cast<std::size_t>(k)] = f((b - a) / 2 * t + (a + b) / 2);
  }
  Polynomial p;
  p.basis = PolynomialBasis::chebyshev;
  p.a = a;
  p.b = b;
  p.coefficients.resize(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    double sum = 0;
    for (int k = 0; k < n; ++k)
      sum += values[static_cast<std::size_t>(k)] * std::cos(std::numbers::pi * j * (k + 0.5) / n);
    p.coefficients[static_cast<std::size_t>(j)] = (j == 0 ? 1.0 : 2.0) * sum / n;
  }
  check(p);
  return p;
}

int Polynomial::degree(double threshold) const {
  for (std::size_t i = coefficients.size(); i-- > 1;) {
    if (std::fabs(coefficients[i]) > threshold) return static_cast<int>(i);
  }
  return 0;
}

std::complex<double> Polynomial::evaluate(std::complex<double> x) const {
  check(*this);
  if (basis == PolynomialBasis::monomial) {
    std::complex<double> acc = 0;
    for (std::size_t i = coefficients.size(); i-- > 0;) acc = acc * x + coefficients[i];
    return acc;
  }
  const std::complex<double> t = (2.0 * x - (a + b)) / (b - a);
  std::complex<double> b1 = 0, b2 = 0;  // Clenshaw
  for (std::size_t i = coefficients.size(); i-- > 1;) {
    const std::complex<double> b0 = coefficients[i] + 2.0 * t * b1 - b2;
    b2 = b1;
    b1 = b0;
  }
  return coefficients[0] + t * b1 - b2;
}

int polynomial_depth(const Polynomial& p, double threshold) {
  check(p);
  const int degree = p.degree(threshold);
  return detail::ceil_log2(static_cast<std::size_t>(degree) + 1) + (maps_interval(p) ? 1 : 0);
}

ValueRef evaluate_polynomial(ProgramBuilder& b, ValueRef x, const Polynomial& p, const PolynomialOptions& options) {
  check(p);
  std::vector<double> c = p.coefficients;
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (std::fabs(c[i]) <= options.threshold) c[i] = 0.0;
  }
  const int degree = p.degree(options.threshold);
  if (degree == 0) {
    throw InvalidArgumentError("polynomial: every coefficient of degree >= 1 is at most the threshold " +
                               std::to_string(options.threshold) + ": the result would be a constant");
  }
  c.resize(static_cast<std::size_t>(degree) + 1);
  const ValueState& xs = b.state(x);
  const double scale = options.output_scale.value_or(xs.scale);
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw InvalidArgumentError("polynomial: output scale " + std::to_string(scale) + " is not a finite positive scale");
  }
  const int depth = polynomial_depth(p, options.threshold);
  if (xs.level < depth) {
    throw StateError("polynomial: degree " + std::to_string(degree) + " needs " + std::to_string(depth) +
                     " levels, x is at level " + std::to_string(xs.level) + ", expected level " +
                     std::to_string(depth) + " or higher");
  }
  ValueRef y = x;
  if (maps_interval(p)) {  // y = (2x - (a + b)) / (b - a), one level, x's scale
    const double alpha = 2.0 / (p.b - p.a), beta = -(p.a + p.b) / (p.b - p.a);
    y = b.multiply_scalar(x, alpha, detail::rescale_divisor(b, xs.level));
    if (beta != 0.0) y = b.add_scalar(y, beta);
    y = b.rescale(y);
  }
  const int levels = detail::ceil_log2(static_cast<std::size_t>(degree) + 1);
  const int baby = 1 << ((levels + 1) / 2);
  Evaluator evaluator(b, y, p.basis == PolynomialBasis::chebyshev, std::max(baby, 2));
  const auto result = evaluator.evaluate(c, b.state(y).level - levels, scale);
  return *result.ciphertext;  // degree >= 1: never a constant
}

}  // namespace fhelium::circuits
