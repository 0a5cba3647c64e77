// The capture lanes' dependency analysis (host-only: runs without a GPU).
// Each test feeds the planner operations' reads and writes and checks the
// lane it chose and the waits it asked for: every conflicting earlier
// operation must be ordered before the new one (same lane, a wait, or
// implied by a wait), and independent operations go to different lanes.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "../../backends/cuda/src/lane_planner.hpp"
#include "fhelium/error.hpp"

namespace fhelium::cuda {
namespace {

MemoryAccess reads(std::uintptr_t begin, std::uintptr_t end) { return {begin, end, false}; }
MemoryAccess writes(std::uintptr_t begin, std::uintptr_t end) { return {begin, end, true}; }

// Replays the planner's decisions: which operations are ordered before each.
class Replay {
 public:
  explicit Replay(int lanes, int heavy_lanes = -1)
      : planner(lanes, heavy_lanes < 0 ? lanes : heavy_lanes), last_on(static_cast<std::size_t>(lanes), -1) {}

  LanePlan add(std::vector<MemoryAccess> accesses, bool heavy = false) {
    LanePlan plan = planner.add(accesses, heavy);
    std::set<int> before;
    const int tail = last_on[static_cast<std::size_t>(plan.lane)];
    if (tail >= 0) {
      before = after[static_cast<std::size_t>(tail)];
      before.insert(tail);
    }
    for (int w : plan.waits) {
      before.insert(w);
      before.insert(after[static_cast<std::size_t>(w)].begin(), after[static_cast<std::size_t>(w)].end());
    }
    after.push_back(before);
    last_on[static_cast<std::size_t>(plan.lane)] = static_cast<int>(after.size()) - 1;
    return plan;
  }
  // Whether operation `a` is finished before operation `b` starts.
  bool ordered(int a, int b) const { return after[static_cast<std::size_t>(b)].count(a) > 0; }

  LanePlanner planner;
  std::vector<int> last_on;
  std::vector<std::set<int>> after;  // per operation: every operation finished before it starts
};

TEST(LanePlanner, IndependentOperationsTakeDifferentLanes) {
  Replay r(4);
  std::set<int> lanes;
  for (std::uintptr_t i = 0; i < 4; ++i) {
    const LanePlan p = r.add({reads(1000 + 100 * i, 1100 + 100 * i), writes(5000 + 100 * i, 5100 + 100 * i)});
    EXPECT_TRUE(p.fork) << "operation " << i;
    EXPECT_TRUE(p.waits.empty()) << "operation " << i;
    lanes.insert(p.lane);
  }
  EXPECT_EQ(lanes.size(), 4u);
  // A fifth independent one shares a lane (the oldest) but waits for nothing.
  const LanePlan fifth = r.add({writes(9000, 9100)});
  EXPECT_FALSE(fifth.fork);
  EXPECT_TRUE(fifth.waits.empty());
  EXPECT_EQ(fifth.lane, 0);
}

TEST(LanePlanner, ReadAfterWriteExtendsTheWritersLane) {
  Replay r(4);
  const LanePlan w = r.add({writes(0, 100)});
  const LanePlan rd = r.add({reads(50, 60), writes(200, 300)});
  EXPECT_EQ(rd.lane, w.lane);
  EXPECT_TRUE(rd.waits.empty());
  EXPECT_TRUE(r.ordered(0, 1));
}

TEST(LanePlanner, ReadersOfOneValueRunSideBySideAndTheNextWriterWaitsForAll) {
  Replay r(4);
  r.add({writes(0, 100)});                      // 0: writes x
  const LanePlan a = r.add({reads(0, 100), writes(1000, 1100)});  // 1: reads x
  const LanePlan b = r.add({reads(0, 100), writes(2000, 2100)});  // 2: reads x
  const LanePlan c = r.add({reads(0, 100), writes(3000, 3100)});  // 3: reads x
  EXPECT_NE(a.lane, b.lane);
  EXPECT_NE(b.lane, c.lane);
  EXPECT_NE(a.lane, c.lane);
  EXPECT_FALSE(r.ordered(1, 2));
  EXPECT_FALSE(r.ordered(2, 3));
  for (int op : {1, 2, 3}) EXPECT_TRUE(r.ordered(0, op)) << op;
  r.add({writes(40, 41)});  // 4: overwrites part of x: after every reader (write after read)
  for (int op : {0, 1, 2, 3}) EXPECT_TRUE(r.ordered(op, 4)) << op;
}

TEST(LanePlanner, WriteAfterWriteIsOrdered) {
  Replay r(4);
  r.add({writes(0, 100)});
  r.add({writes(500, 600)});
  r.add({writes(99, 501)});  // overlaps both
  EXPECT_TRUE(r.ordered(0, 2));
  EXPECT_TRUE(r.ordered(1, 2));
  EXPECT_FALSE(r.ordered(0, 1));
}

TEST(LanePlanner, ReadsAfterReadsAndAdjacentRangesNeedNoOrder) {
  Replay r(4);
  r.add({reads(0, 100), writes(1000, 1100)});
  r.add({reads(0, 100), writes(1100, 1200)});  // touches [1100, ...): adjacent, not overlapping
  EXPECT_FALSE(r.ordered(0, 1));
}

TEST(LanePlanner, AWorkspaceSerializesItsUsers) {
  Replay r(2);
  const std::uintptr_t workspace = 77;
  r.add({reads(0, 100), writes(1000, 1100), writes(workspace, workspace + 1)});
  r.add({reads(200, 300), writes(2000, 2100), writes(workspace, workspace + 1)});
  r.add({reads(400, 500), writes(3000, 3100)});  // no workspace: free to run beside them
  EXPECT_TRUE(r.ordered(0, 1));
  EXPECT_FALSE(r.ordered(0, 2));
  EXPECT_FALSE(r.ordered(1, 2));
}

TEST(LanePlanner, WaitsImpliedByAnotherWaitAreLeftOut) {
  Replay r(3);
  const LanePlan x = r.add({writes(0, 100)});                          // 0
  const LanePlan y = r.add({writes(200, 300)});                        // 1
  const LanePlan z = r.add({reads(0, 100), reads(200, 300), writes(400, 500)});  // 2
  EXPECT_NE(x.lane, y.lane);
  EXPECT_EQ(z.lane, y.lane);  // extends the latest dependency's lane
  EXPECT_EQ(z.waits, std::vector<int>{0});
  // 3 needs 0, 1 and 2; 2 already follows 0 and 1: it extends 2's lane, no waits.
  const LanePlan w = r.add({reads(0, 100), reads(200, 300), reads(400, 500), writes(600, 700)});
  EXPECT_EQ(w.lane, z.lane);
  EXPECT_TRUE(w.waits.empty());
  for (int op : {0, 1, 2}) EXPECT_TRUE(r.ordered(op, 3)) << op;
}

TEST(LanePlanner, AWaitImpliedByAnotherWaitIsLeftOut) {
  Replay r(3);
  r.add({writes(0, 100)});                                    // 0, lane A
  r.add({writes(200, 300)});                                  // 1, lane B
  r.add({reads(0, 100), writes(1000, 1100)});                 // 2: extends A
  r.add({reads(0, 100), reads(200, 300), writes(400, 500)});  // 3: extends B, waits for 0
  r.add({reads(400, 500), writes(1200, 1300)});               // 4: extends B
  // 5 needs 0 (A) and 3 (B), neither its lane's last: a new lane, one wait
  // (3 already waited for 0).
  const LanePlan p = r.add({reads(0, 100), reads(400, 500), writes(600, 700)});
  EXPECT_TRUE(p.fork);
  EXPECT_EQ(p.waits, std::vector<int>{3});
  EXPECT_TRUE(r.ordered(0, 5));
  EXPECT_TRUE(r.ordered(3, 5));
}

// A long random schedule: every conflicting pair is ordered, and the
// planner's lanes run some operations side by side.
TEST(LanePlanner, EveryConflictIsOrderedInARandomSchedule) {
  Replay r(4);
  std::vector<std::vector<MemoryAccess>> ops;
  unsigned seed = 12345;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  for (int i = 0; i < 300; ++i) {
    std::vector<MemoryAccess> a;
    const int n = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < n; ++k) {
      const std::uintptr_t begin = (next() % 40) * 10;
      a.push_back({begin, begin + 5 + next() % 30, next() % 3 == 0});
    }
    ops.push_back(a);
    r.add(a, next() % 4 == 0);
  }
  int side_by_side = 0;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      bool conflict = false;
      for (const auto& x : ops[i]) {
        for (const auto& y : ops[j]) {
          conflict = conflict || (x.begin < y.end && y.begin < x.end && (x.write || y.write));
        }
      }
      const bool ordered = r.ordered(static_cast<int>(i), static_cast<int>(j));
      if (conflict) {
        ASSERT_TRUE(ordered) << "operations " << i << " and " << j << " conflict";
      }
      if (!ordered) ++side_by_side;
    }
  }
  EXPECT_GT(side_by_side, 0);
}

TEST(LanePlanner, ALightOperationIsNotQueuedBehindAHeavyOne) {
  LanePlanner p(2, 2);
  p.add({{writes(0, 100)}}, true);  // 0: heavy, lane 0
  p.add({{writes(200, 300)}});      // 1: light, lane 1
  // 2 depends on neither: lane 0 is idle the longest, but it ends in the heavy one.
  const LanePlan light = p.add({{writes(400, 500)}});
  EXPECT_EQ(light.lane, 1);
  // 3 needs the heavy one, which is still its lane's last: it extends that chain.
  const LanePlan after_heavy = p.add({{reads(0, 100), writes(600, 700)}});
  EXPECT_EQ(after_heavy.lane, 0);
  EXPECT_TRUE(after_heavy.waits.empty());
}

// Rewriting the same buffers over and over keeps every later conflict
// ordered (an access inside a later write is forgotten, the write is not).
TEST(LanePlanner, OverwrittenRangesStayOrdered) {
  Replay r(4);
  for (int i = 0; i < 50; ++i) {
    const auto x = static_cast<std::uintptr_t>(100 * (i % 5));
    r.add({reads(x, x + 50), writes(x + 50, x + 100)});
    r.add({reads(x + 60, x + 70), writes(x, x + 100)}, i % 7 == 0);
  }
  for (int op = 0; op + 2 < r.planner.operations(); op += 2) {
    EXPECT_TRUE(r.ordered(op, op + 1)) << op;  // read x then write it (write after read)
  }
  // The last writer of [0, 100) is ordered after every earlier access to it.
  const int last = r.planner.operations() - 1 - 8;  // operation 91: i = 45, x = 0
  for (int op = 0; op < last; op += 10) EXPECT_TRUE(r.ordered(op, last)) << op;
}

TEST(LanePlanner, ResetForgetsThePreviousCapture) {
  LanePlanner p(2, 2);
  p.add({{writes(0, 100)}});
  p.reset();
  EXPECT_EQ(p.operations(), 0);
  const LanePlan again = p.add({{reads(0, 100)}});
  EXPECT_TRUE(again.fork);
  EXPECT_TRUE(again.waits.empty());
  EXPECT_EQ(p.tails()[0], 0);
  EXPECT_EQ(p.tails()[1], -1);
}

// The capture's shape (CaptureLanes): 4 lanes, key switches on lanes 0 and 1,
// each with its own workspace. Independent key switches run side by side;
// two on one lane are ordered by its stream, whatever their data.
TEST(LanePlanner, HeavyOperationsTakeTheHeavyLanesOnly) {
  Replay r(4, 2);
  const LanePlan a = r.add({reads(0, 100), writes(1000, 1100)}, true);
  const LanePlan b = r.add({reads(200, 300), writes(2000, 2100)}, true);
  EXPECT_LT(a.lane, 2);
  EXPECT_LT(b.lane, 2);
  EXPECT_NE(a.lane, b.lane);
  EXPECT_FALSE(r.ordered(0, 1));
  // A light one, independent: a lane that ends in no key switch.
  const LanePlan light = r.add({writes(4000, 4100)});
  EXPECT_GE(light.lane, 2);
  // A key switch that reads the light one's output: a heavy lane, after it.
  const LanePlan c = r.add({reads(4000, 4100), writes(5000, 5100)}, true);
  EXPECT_LT(c.lane, 2);
  EXPECT_TRUE(r.ordered(2, 3));
  EXPECT_EQ(c.waits, std::vector<int>{2});
}

TEST(LanePlanner, KeySwitchesOnOneLaneAreOrderedInARandomSchedule) {
  Replay r(4, 2);
  unsigned seed = 777;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  std::vector<std::pair<int, bool>> placed;  // lane, heavy
  for (int i = 0; i < 200; ++i) {
    const std::uintptr_t begin = (next() % 40) * 10;
    const bool heavy = next() % 2 == 0;
    const LanePlan p = r.add({reads(begin, begin + 15), writes(1000 + begin, 1000 + begin + 5 + next() % 20)}, heavy);
    if (heavy) {
      ASSERT_LT(p.lane, 2) << "operation " << i;
    }
    placed.emplace_back(p.lane, heavy);
  }
  int side_by_side = 0;
  for (std::size_t j = 0; j < placed.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      if (!placed[i].second || !placed[j].second) continue;
      const bool ordered = r.ordered(static_cast<int>(i), static_cast<int>(j));
      if (placed[i].first == placed[j].first) {
        ASSERT_TRUE(ordered) << "key switches " << i << " and " << j << " share lane " << placed[i].first;
      }
      if (!ordered) ++side_by_side;
    }
  }
  EXPECT_GT(side_by_side, 0);
}

TEST(LanePlanner, RefusesZeroLanes) { EXPECT_THROW(LanePlanner(0, 1), InvalidArgumentError); }

TEST(LanePlanner, RefusesHeavyLanesOutsideTheLanes) {
  EXPECT_THROW(LanePlanner(4, 0), InvalidArgumentError);
  EXPECT_THROW(LanePlanner(4, 5), InvalidArgumentError);
}

}  // namespace
}  // namespace fhelium::cuda
