#include "lane_planner.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "fhelium/error.hpp"

namespace fhelium::cuda {

LanePlanner::LanePlanner(int lanes, int heavy_lanes) : heavy_lanes_(heavy_lanes) {
  if (lanes < 1) throw InvalidArgumentError("LanePlanner: " + std::to_string(lanes) + " lanes, expected at least 1");
  if (heavy_lanes < 1 || heavy_lanes > lanes) {
    throw InvalidArgumentError("LanePlanner: " + std::to_string(heavy_lanes) + " heavy lanes, expected 1.." +
                               std::to_string(lanes));
  }
  tail_.assign(static_cast<std::size_t>(lanes), -1);
  tail_heavy_.assign(static_cast<std::size_t>(lanes), false);
}

void LanePlanner::reset() {
  recorded_.clear();
  lane_of_.clear();
  clock_.clear();
  std::fill(tail_.begin(), tail_.end(), -1);
  std::fill(tail_heavy_.begin(), tail_heavy_.end(), false);
}

LanePlanner::Clock LanePlanner::needs(std::span<const MemoryAccess> accesses) const {
  Clock need(tail_.size(), -1);
  for (const MemoryAccess& a : accesses) {
    for (const Recorded& r : recorded_) {
      const bool overlap = a.begin < r.access.end && r.access.begin < a.end;
      if (!overlap || !(a.write || r.access.write)) continue;  // reads after reads need no order
      int& latest = need[static_cast<std::size_t>(lane_of_[static_cast<std::size_t>(r.op)])];
      latest = std::max(latest, r.op);
    }
  }
  return need;
}

// Extends the chain of the latest dependency when it is its lane's last
// operation; otherwise an unused lane, else the lane idle the longest (its
// last operation is the oldest, the likeliest to have finished already),
// preferring lanes that do not end in a heavy operation. A heavy operation
// considers the heavy lanes only.
int LanePlanner::choose_lane(const Clock& need, bool heavy) const {
  const int candidates = heavy ? heavy_lanes_ : lanes();
  int best = -1;
  for (int lane = 0; lane < candidates; ++lane) {
    const int n = need[static_cast<std::size_t>(lane)];
    if (n >= 0 && tail_[static_cast<std::size_t>(lane)] == n &&
        (best < 0 || n > need[static_cast<std::size_t>(best)])) {
      best = lane;
    }
  }
  if (best >= 0) return best;
  int oldest = -1;
  int oldest_light = -1;
  for (int lane = 0; lane < candidates; ++lane) {
    const int tail = tail_[static_cast<std::size_t>(lane)];
    if (tail < 0) return lane;  // unused
    if (oldest < 0 || tail < tail_[static_cast<std::size_t>(oldest)]) oldest = lane;
    if (!tail_heavy_[static_cast<std::size_t>(lane)] &&
        (oldest_light < 0 || tail < tail_[static_cast<std::size_t>(oldest_light)])) {
      oldest_light = lane;
    }
  }
  return oldest_light >= 0 ? oldest_light : oldest;
}

LanePlan LanePlanner::add(std::span<const MemoryAccess> accesses, bool heavy) {
  const Clock need = needs(accesses);
  LanePlan plan;
  plan.lane = choose_lane(need, heavy);
  const auto lane = static_cast<std::size_t>(plan.lane);
  plan.fork = tail_[lane] < 0;
  // What is known finished when the operation starts: its lane's history,
  // then each wait's (latest first, so earlier ones it covers are skipped).
  Clock finished = plan.fork ? Clock(tail_.size(), -1) : clock_[static_cast<std::size_t>(tail_[lane])];
  std::vector<int> pending;
  for (std::size_t l = 0; l < need.size(); ++l) {
    if (need[l] > finished[l]) pending.push_back(need[l]);
  }
  std::sort(pending.begin(), pending.end(), std::greater<>());
  for (const int op : pending) {
    const auto on = static_cast<std::size_t>(lane_of_[static_cast<std::size_t>(op)]);
    if (op <= finished[on]) continue;
    plan.waits.push_back(op);
    const Clock& theirs = clock_[static_cast<std::size_t>(op)];
    for (std::size_t l = 0; l < finished.size(); ++l) finished[l] = std::max(finished[l], theirs[l]);
  }
  const int id = operations();
  finished[lane] = id;
  clock_.push_back(std::move(finished));
  lane_of_.push_back(plan.lane);
  tail_[lane] = id;
  tail_heavy_[lane] = heavy;
  // An access inside a range this operation writes is forgotten: whatever
  // touches it later conflicts with this write, which is ordered after it.
  // So the record holds about one entry per live range (and its readers).
  const auto covered = [&](const Recorded& r) {
    return std::any_of(accesses.begin(), accesses.end(), [&](const MemoryAccess& w) {
      return w.write && w.begin <= r.access.begin && r.access.end <= w.end;
    });
  };
  recorded_.erase(std::remove_if(recorded_.begin(), recorded_.end(), covered), recorded_.end());
  for (const MemoryAccess& a : accesses) {
    if (a.write || !covered({a, id})) recorded_.push_back({a, id});
  }
  return plan;
}

}  // namespace fhelium::cuda
