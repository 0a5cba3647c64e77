#include "fhelium/circuits/slots.hpp"

#include <algorithm>
#include <cmath>

#include "circuit_internal.hpp"
#include "fhelium/error.hpp"

namespace fhelium::circuits {

namespace detail {

double rescale_divisor(const runtime::ProgramBuilder& b, int level) { return b.context()->rescale_divisor(level); }

bool exact_scale(double a, double b) { return std::fabs(a - b) <= 1e-14 * std::max(std::fabs(a), std::fabs(b)); }

runtime::ValueRef at_level(runtime::ProgramBuilder& b, runtime::ValueRef v, int level) {
  return b.state(v).level == level ? v : b.drop_to_level(v, level);
}

int ceil_log2(std::size_t n) {
  int bits = 0;
  while ((std::size_t{1} << bits) < n) ++bits;
  return bits;
}

bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace detail

namespace {

void check_width(const ProgramBuilder& b, std::size_t width) {
  const std::size_t slots = b.context()->ring_degree() / 2;
  if (!detail::is_power_of_two(width) || width > slots) {
    throw InvalidArgumentError("sum_slots: width " + std::to_string(width) +
                               " is not a power of two up to the slot count " + std::to_string(slots));
  }
}

}  // namespace

ValueRef align(ProgramBuilder& b, ValueRef x, int level, double scale) {
  const ValueState& s = b.state(x);
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw InvalidArgumentError("align: scale " + std::to_string(scale) + " is not a finite positive scale");
  }
  if (level < 0 || level > s.level) {
    throw StateError("align: x is at level " + std::to_string(s.level) + ", expected a target level 0.." +
                     std::to_string(s.level) + ", got " + std::to_string(level));
  }
  // Within same_scale but not exact: kept as it is only where no level is
  // left to set the scale.
  if (detail::exact_scale(s.scale, scale) || (same_scale(s.scale, scale) && s.level == level)) {
    return detail::at_level(b, x, level);
  }
  if (s.level < level + 1) {
    throw StateError("align: x (level " + std::to_string(s.level) + ", scale 2^" + std::to_string(std::log2(s.scale)) +
                     ") must be at level " + std::to_string(level + 1) + " or higher to reach scale 2^" +
                     std::to_string(std::log2(scale)) + " at level " + std::to_string(level) +
                     " (setting a scale uses one level)");
  }
  const ValueRef dropped = detail::at_level(b, x, level + 1);
  const double scalar_scale = scale * detail::rescale_divisor(b, level + 1) / b.state(dropped).scale;
  return b.rescale(b.multiply_scalar(dropped, 1.0, scalar_scale));
}

std::vector<long> sum_slots_steps(std::size_t width) {
  std::vector<long> steps;
  for (std::size_t s = 1; s < width; s *= 2) steps.push_back(static_cast<long>(s));
  return steps;
}

ValueRef sum_slots(ProgramBuilder& b, ValueRef x, std::size_t width) {
  check_width(b, width);
  for (long step : sum_slots_steps(width)) x = b.add(x, b.rotate(x, step));
  return x;
}

ValueRef inner_product(ProgramBuilder& b, ValueRef x, ValueRef y, std::size_t width) {
  check_width(b, width);
  const int level = std::min(b.state(x).level, b.state(y).level);
  const ValueRef product = b.multiply_relinearize_rescale(detail::at_level(b, x, level), detail::at_level(b, y, level));
  return sum_slots(b, product, width);
}

ValueRef inner_product(ProgramBuilder& b, ValueRef x, const Slots& weights, std::size_t width,
                       const std::string& name) {
  check_width(b, width);
  const int level = b.state(x).level;
  const ValueRef w = b.constant(b.fresh_name(name), weights, detail::rescale_divisor(b, level));
  return sum_slots(b, b.rescale(b.multiply_plain(x, w)), width);
}

}  // namespace fhelium::circuits
