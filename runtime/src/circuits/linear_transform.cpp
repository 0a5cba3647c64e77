#include "fhelium/circuits/linear_transform.hpp"

#include <cmath>
#include <set>

#include "circuit_internal.hpp"
#include "fhelium/error.hpp"

namespace fhelium::circuits {
namespace {

struct Split {
  std::set<long> baby;   // non-zero k mod n1
  std::set<long> giant;  // non-zero k - k mod n1
};

Split split(const std::vector<long>& diagonals, long n1) {
  Split s;
  for (long k : diagonals) {
    if (k % n1 != 0) s.baby.insert(k % n1);
    if (k - k % n1 != 0) s.giant.insert(k - k % n1);
  }
  return s;
}

// Horner's rule over the giants that have a group: they are visited
// cyclically ascending from the one after the largest gap, so that the steps
// between consecutive ones are small (and mostly equal); steps are signed,
// in (-period/2, period/2].
struct HornerPlan {
  std::vector<long> order;
  std::vector<long> between;  // between[i]: from order[i] to order[i + 1]
  long first = 0;             // the final rotation, to order[0]
};

long signed_step(long step, long period) {
  step = ((step % period) + period) % period;
  return step > period / 2 ? step - period : step;
}

HornerPlan horner_plan(const std::set<long>& giants, long period) {
  HornerPlan plan;
  std::vector<long> sorted(giants.begin(), giants.end());
  std::size_t start = 0;
  long widest = -1;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const long previous = i == 0 ? sorted.back() - period : sorted[i - 1];
    if (sorted[i] - previous > widest) {
      widest = sorted[i] - previous;
      start = i;
    }
  }
  for (std::size_t i = 0; i < sorted.size(); ++i) plan.order.push_back(sorted[(start + i) % sorted.size()]);
  for (std::size_t i = 0; i + 1 < plan.order.size(); ++i) {
    plan.between.push_back(signed_step(plan.order[i + 1] - plan.order[i], period));
  }
  plan.first = signed_step(plan.order.front(), period);
  return plan;
}

// The giants (k - k mod n1) of the diagonals, zero included.
std::set<long> giants_of(const std::vector<long>& diagonals, long n1) {
  std::set<long> out;
  for (long k : diagonals) out.insert(k - k % n1);
  return out;
}

std::size_t checked_period(std::size_t period, std::size_t slots) {
  if (!detail::is_power_of_two(slots)) {
    throw InvalidArgumentError("linear transform: slot count " + std::to_string(slots) + " is not a power of two");
  }
  if (!detail::is_power_of_two(period) || period > slots) {
    throw InvalidArgumentError("linear transform: period " + std::to_string(period) +
                               " is not a power of two dividing the slot count " + std::to_string(slots));
  }
  return period;
}

}  // namespace

long best_baby_step(const std::vector<long>& diagonals, std::size_t period) {
  // Every n1 for small problems; powers of two when that would be slow.
  const bool every = diagonals.size() * period <= (std::size_t{1} << 22);
  long best = 1;
  std::size_t best_cost = 0, best_giants = 0;
  bool first = true;
  for (long n1 = 1; n1 <= static_cast<long>(period); n1 = every ? n1 + 1 : n1 * 2) {
    const Split s = split(diagonals, n1);
    const std::size_t cost = s.baby.size() + s.giant.size();
    if (first || cost < best_cost || (cost == best_cost && s.giant.size() < best_giants)) {
      best = n1;
      best_cost = cost;
      best_giants = s.giant.size();
      first = false;
    }
  }
  return best;
}

LinearTransform::LinearTransform(std::map<long, Slots> diagonals, std::size_t input_period, std::size_t output_period,
                                 std::size_t slots)
    : input_period_(checked_period(input_period, slots)),
      output_period_(checked_period(output_period, slots)),
      slots_(slots) {
  const long d = static_cast<long>(input_period_);
  const std::size_t values_per_diagonal = period();
  for (auto& [k, values] : diagonals) {
    if (values.size() != values_per_diagonal) {
      throw InvalidArgumentError("linear transform: diagonal " + std::to_string(k) + " has " +
                                 std::to_string(values.size()) + " values, expected the period " +
                                 std::to_string(values_per_diagonal));
    }
    bool zero = true;
    for (const auto& v : values) {
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) {
        throw InvalidArgumentError("linear transform: diagonal " + std::to_string(k) +
                                   " has a value that is not finite");
      }
      zero = zero && v == std::complex<double>{};
    }
    if (zero) continue;
    const long index = ((k % d) + d) % d;
    if (diagonals_.count(index) != 0) {
      throw InvalidArgumentError("linear transform: diagonal " + std::to_string(k) + " is given twice (as " +
                                 std::to_string(index) + " modulo the period " + std::to_string(input_period_) + ")");
    }
    diagonals_[index] = std::move(values);
  }
  if (diagonals_.empty()) throw InvalidArgumentError("linear transform: every diagonal is zero");
  baby_ = best_baby_step(diagonal_indices(), input_period_);
}

LinearTransform LinearTransform::from_diagonals(std::map<long, Slots> diagonals, std::size_t period,
                                                std::size_t slots) {
  return LinearTransform(std::move(diagonals), period, period, slots);
}

LinearTransform LinearTransform::from_diagonals(std::map<long, Slots> diagonals, std::size_t input_period,
                                                std::size_t output_period, std::size_t slots) {
  return LinearTransform(std::move(diagonals), input_period, output_period, slots);
}

LinearTransform LinearTransform::with_baby_step(long n1) const {
  if (n1 < 1 || n1 > static_cast<long>(input_period_)) {
    throw InvalidArgumentError("linear transform: baby step " + std::to_string(n1) + ", expected 1.." +
                               std::to_string(input_period_));
  }
  LinearTransform out = *this;
  out.baby_ = n1;
  return out;
}

LinearTransform LinearTransform::from_matrix(const std::vector<Slots>& matrix, std::size_t slots) {
  const std::size_t rows = matrix.size();
  const std::size_t cols = rows == 0 ? 0 : matrix[0].size();
  if (rows == 0 || cols == 0) throw InvalidArgumentError("linear transform: the matrix is empty");
  for (std::size_t i = 0; i < rows; ++i) {
    if (matrix[i].size() != cols) {
      throw InvalidArgumentError("linear transform: row " + std::to_string(i) + " has " +
                                 std::to_string(matrix[i].size()) + " entries, expected " + std::to_string(cols));
    }
  }
  std::size_t px = 1, py = 1;
  while (px < cols) px *= 2;
  while (py < rows) py *= 2;
  if (std::max(px, py) > slots) {
    throw InvalidArgumentError("linear transform: a " + std::to_string(rows) + " x " + std::to_string(cols) +
                               " matrix needs period " + std::to_string(std::max(px, py)) +
                               ", more than the slot count " + std::to_string(slots));
  }
  const std::size_t period = std::max(px, py);
  std::map<long, Slots> diagonals;
  for (std::size_t k = 0; k < px; ++k) {
    Slots diagonal(period);
    for (std::size_t j = 0; j < period; ++j) {
      const std::size_t r = j % py, c = (j + k) % px;
      if (r < rows && c < cols) diagonal[j] = matrix[r][c];
    }
    diagonals[static_cast<long>(k)] = std::move(diagonal);
  }
  return LinearTransform(std::move(diagonals), px, py, slots);
}

LinearTransform LinearTransform::from_matrix(const std::vector<std::vector<double>>& matrix, std::size_t slots) {
  std::vector<Slots> complex_matrix;
  complex_matrix.reserve(matrix.size());
  for (const auto& row : matrix) complex_matrix.emplace_back(row.begin(), row.end());
  return from_matrix(complex_matrix, slots);
}

std::vector<long> LinearTransform::diagonal_indices() const {
  std::vector<long> out;
  for (const auto& [k, values] : diagonals_) out.push_back(k);
  return out;
}

std::vector<long> LinearTransform::baby_steps() const {
  const Split s = split(diagonal_indices(), baby_);
  return {s.baby.begin(), s.baby.end()};
}

std::vector<long> LinearTransform::giant_steps() const {
  if (!horner_) {
    const Split s = split(diagonal_indices(), baby_);
    return {s.giant.begin(), s.giant.end()};
  }
  const HornerPlan plan = horner_plan(giants_of(diagonal_indices(), baby_), static_cast<long>(period()));
  std::set<long> steps(plan.between.begin(), plan.between.end());
  if (plan.first != 0) steps.insert(plan.first);
  return {steps.begin(), steps.end()};
}

std::vector<long> LinearTransform::rotation_steps() const {
  std::set<long> all;
  for (long s : baby_steps()) all.insert(s);
  for (long s : giant_steps()) all.insert(s);
  return {all.begin(), all.end()};
}

std::size_t LinearTransform::key_switches() const {
  const std::size_t babies = baby_steps().size();
  if (!horner_) return babies + giant_steps().size();
  const HornerPlan plan = horner_plan(giants_of(diagonal_indices(), baby_), static_cast<long>(period()));
  return babies + plan.between.size() + (plan.first != 0 ? 1 : 0);
}

LinearTransform LinearTransform::with_horner_giants(bool horner) const {
  LinearTransform out = *this;
  out.horner_ = horner;
  return out;
}

LinearTransform LinearTransform::with_rotate_sum(bool rotate_sum) const {
  LinearTransform out = *this;
  out.rotate_sum_ = rotate_sum;
  return out;
}

Slots LinearTransform::pack(const Slots& x) const {
  if (x.size() > input_period_) {
    throw InvalidArgumentError("linear transform: a vector of " + std::to_string(x.size()) +
                               " entries, expected at most the input period " + std::to_string(input_period_));
  }
  Slots out(slots_);
  for (std::size_t i = 0; i < slots_; ++i) {
    const std::size_t j = i % input_period_;
    if (j < x.size()) out[i] = x[j];
  }
  return out;
}

// rotate(diag_k, -giant), repeated over all slots.
Slots LinearTransform::pre_rotated(long k, long giant) const {
  const Slots& diagonal = diagonals_.at(k);
  const long d = static_cast<long>(period());
  Slots out(slots_);
  for (std::size_t i = 0; i < slots_; ++i) {
    const long j = ((static_cast<long>(i) - giant) % d + d) % d;
    out[i] = diagonal[static_cast<std::size_t>(j)];
  }
  return out;
}

ValueRef LinearTransform::apply(ProgramBuilder& b, ValueRef x, const std::string& name,
                                std::optional<double> output_scale) const {
  return b.rescale(apply_unrescaled(b, x, name, output_scale));
}

void LinearTransform::check_slots(const ProgramBuilder& b) const {
  const std::size_t context_slots = b.context()->ring_degree() / 2;
  if (context_slots != slots_) {
    throw InvalidArgumentError("linear transform: built for " + std::to_string(slots_) +
                               " slots, the builder's context has " + std::to_string(context_slots));
  }
}

ValueRef LinearTransform::apply_unrescaled(ProgramBuilder& b, ValueRef x, const std::string& name,
                                           std::optional<double> output_scale) const {
  check_slots(b);
  std::map<long, ValueRef> rotated{{0, x}};
  const std::vector<long> babies = baby_steps();
  if (!babies.empty()) {
    const std::vector<ValueRef> hoisted = b.rotate_hoisted(x, babies);
    for (std::size_t i = 0; i < babies.size(); ++i) rotated[babies[i]] = hoisted[i];
  }
  return sum_groups(b, rotated, name, output_scale);
}

ValueRef LinearTransform::sum_groups(ProgramBuilder& b, const std::map<long, ValueRef>& rotated,
                                     const std::string& name, std::optional<double> output_scale) const {
  check_slots(b);
  for (long j : baby_steps()) {
    if (!rotated.count(j)) {
      throw InvalidArgumentError("linear transform: no rotation of x by the baby step " + std::to_string(j));
    }
  }
  const ValueRef x = rotated.at(0);
  const int level = b.state(x).level;
  const double diagonal_scale =
      detail::rescale_divisor(b, level) * (output_scale ? *output_scale / b.state(x).scale : 1.0);
  std::map<long, std::vector<long>> groups;  // giant -> its diagonals
  for (const auto& [k, values] : diagonals_) groups[k - k % baby_].push_back(k);

  // P_g = sum of rot(diag_k, -g) * rot(x, k mod n1) over the group of g.
  const auto group_sum = [&](long giant) {
    std::vector<ValueRef> values, diagonals;
    for (long k : groups.at(giant)) {
      values.push_back(rotated.at(k % baby_));
      diagonals.push_back(
          b.constant(b.fresh_name(name + "_" + std::to_string(k)), pre_rotated(k, giant), diagonal_scale));
    }
    return values.size() == 1 ? b.multiply_plain(values[0], diagonals[0]) : b.multiply_plain_sum(values, diagonals);
  };
  if (horner_) {
    std::set<long> giants;
    for (const auto& [giant, ks] : groups) giants.insert(giant);
    const HornerPlan plan = horner_plan(giants, static_cast<long>(period()));
    ValueRef acc = group_sum(plan.order.back());
    for (std::size_t i = plan.order.size() - 1; i-- > 0;) {
      acc = b.add(b.rotate(acc, plan.between[i]), group_sum(plan.order[i]));
    }
    return plan.first == 0 ? acc : b.rotate(acc, plan.first);
  }
  // Every group's sum before any giant rotation: consecutive sums run as one
  // backend call that reads each baby rotation once (Executable::run).
  std::vector<ValueRef> parts;
  std::vector<long> giants;
  for (const auto& [giant, ks] : groups) {
    parts.push_back(group_sum(giant));
    giants.push_back(giant);
  }
  if (rotate_sum_ && (parts.size() > 1 || giants[0] != 0)) return b.rotate_sum(parts, giants);
  std::size_t i = 0;
  for (const auto& [giant, ks] : groups) {
    if (giant != 0) parts[i] = b.rotate(parts[i], giant);
    ++i;
  }
  return parts.size() == 1 ? parts[0] : b.sum(parts);
}

std::size_t LinearTransform::giant_groups() const { return giants_of(diagonal_indices(), baby_).size(); }

LinearTransform LinearTransform::part(std::size_t rank, std::size_t ranks) const {
  const std::set<long> giants = giants_of(diagonal_indices(), baby_);
  if (ranks == 0 || rank >= ranks || ranks > giants.size()) {
    throw InvalidArgumentError("linear transform: part " + std::to_string(rank) + " of " + std::to_string(ranks) +
                               ", expected a rank below the number of parts and at most " +
                               std::to_string(giants.size()) + " parts (one per giant group, baby step " +
                               std::to_string(baby_) + ")");
  }
  std::set<long> mine;
  std::size_t i = 0;
  for (long giant : giants) {
    if (i++ % ranks == rank) mine.insert(giant);
  }
  LinearTransform out = *this;  // the same baby step, so each group is computed as in the whole
  out.horner_ = false;
  out.rotate_sum_ = false;
  std::erase_if(out.diagonals_,
                [&](const auto& diagonal) { return !mine.count(diagonal.first - diagonal.first % baby_); });
  return out;
}

Slots LinearTransform::apply_clear(const Slots& x) const {
  if (x.size() != slots_) {
    throw InvalidArgumentError("linear transform: " + std::to_string(x.size()) + " slots, expected " +
                               std::to_string(slots_));
  }
  Slots y(slots_);
  for (const auto& [k, diagonal] : diagonals_) {
    for (std::size_t i = 0; i < slots_; ++i) {
      y[i] += diagonal[i % period()] * x[(i + static_cast<std::size_t>(k)) % slots_];
    }
  }
  return y;
}

}  // namespace fhelium::circuits
