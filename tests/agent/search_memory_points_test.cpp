// Memory points toward the budgets' cliffs on the recorded trial table (simulation mode:
// no trainer), and the search options a campaign hands over.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "agent/campaign/campaign.hpp"
#include "agent/search/memory_points.hpp"
#include "search_support.hpp"

namespace sg::agent {
namespace {

using test::Call;
using test::load;
using test::row;
using test::SearchTest;
using test::table;

// Memory points toward the budgets' cliffs: MEM as a recompute dial (a larger value saves
// more memory) with candidates 4 / 8 / 16, GiB as projected at the target.
struct MemoryCliffTest : SearchTest {
  static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  static nlohmann::json point(const char* key, double peak_gib, double target_speedup) {
    auto r = row(key, "accepted", 2.0);
    r["projected_peak_bytes"] = peak_gib * kGiB;
    if (!std::isnan(target_speedup)) r["target_speedup"] = target_speedup;
    return r;
  }
  Manifest dial() const {
    Manifest m = manifest;
    for (auto& s : m.switches) {
      if (s.name == "MEM") s.values = {"-1", "4", "8", "16"};
    }
    return m;
  }
  std::vector<Call> points_called(const ReplayEvaluator& r) const {
    std::vector<Call> out;
    for (const auto& c : r.calls()) {
      if (c.first.find("MEM=") != std::string::npos) out.push_back(c);
    }
    return out;
  }
};

// 8 is over 80 GiB by its projection, 16 fits: the line through the two puts 80 GiB at 13.3,
// so 14 is tried, fits, and the line then points at 14 itself: one evaluation, none for the
// budget that 8 and 16 both fit.
TEST_F(MemoryCliffTest, InterpolatesTheProjectionsToTheBudget) {
  ReplayEvaluator r(table({point("A=1,MEM=4", 128, 3.3), point("A=1,MEM=8", 116.5, 3.6),
                           point("A=1,MEM=16", 61.8, 3.3), point("A=1,MEM=14", 75, 3.4)}));
  SearchOptions o = opts();
  o.budget_bytes = {141 * kGiB, 80 * kGiB};
  const Manifest m = dial();
  SearchContext ctx(m, r, o);
  evaluate_memory_points(ctx, config_from_key("A=1"), "prune");
  const std::vector<Call> want = {
      {"A=1,MEM=4", 4}, {"A=1,MEM=8", 4}, {"A=1,MEM=16", 4}, {"A=1,MEM=14", 4}};
  EXPECT_EQ(points_called(r), want);
  const Evaluation* fourteen = ctx.find(config_from_key("A=1,MEM=14"), 4);
  ASSERT_NE(fourteen, nullptr);
  EXPECT_EQ(fourteen->strategy, "prune");
}

// Ranked at the target: 4 fits 141 GiB by its projection but its probe did not run at the
// target micro-batch (no target speedup), 8's did: halfway, 6 runs there, then 5 does not.
TEST_F(MemoryCliffTest, BisectsWhereTheProbeAtTheTargetStopsFitting) {
  const double none = std::nan("");
  ReplayEvaluator r(table({point("A=1,MEM=4", 128, none), point("A=1,MEM=8", 116.5, 3.6),
                           point("A=1,MEM=16", 61.8, 3.3), point("A=1,MEM=6", 122, 3.7),
                           point("A=1,MEM=5", 125, none)}));
  SearchOptions o = opts();
  o.budget_bytes = {141 * kGiB};
  o.rank_at_target = true;
  const Manifest m = dial();
  SearchContext ctx(m, r, o);
  evaluate_memory_points(ctx, config_from_key("A=1"), "prune");
  const std::vector<Call> want = {
      {"A=1,MEM=4", 4}, {"A=1,MEM=8", 4}, {"A=1,MEM=16", 4}, {"A=1,MEM=6", 4}, {"A=1,MEM=5", 4}};
  EXPECT_EQ(points_called(r), want) << "two steps per budget, then it stops";

  ReplayEvaluator fresh(table({point("A=1,MEM=4", 128, none), point("A=1,MEM=8", 116.5, 3.6),
                               point("A=1,MEM=16", 61.8, 3.3)}));
  SearchOptions p = o;
  p.rank_at_target = false;
  SearchContext by_budget(m, fresh, p);
  evaluate_memory_points(by_budget, config_from_key("A=1"), "prune");
  EXPECT_EQ(points_called(fresh).size(), 3u)
      << "without ranking at the target, all three fit: no cliff";
}

// Points that failed for another reason (a gate failure) make no cliff, and without budgets
// nothing is refined.
TEST_F(MemoryCliffTest, OnlyMemoryMakesACliff) {
  auto failed = row("A=1,MEM=8", "gate_failed", 0);
  ReplayEvaluator r(table({point("A=1,MEM=4", 150, 3.0), failed, point("A=1,MEM=16", 61.8, 3.3)}));
  SearchOptions o = opts();
  o.budget_bytes = {141 * kGiB};
  const Manifest m = dial();
  SearchContext ctx(m, r, o);
  evaluate_memory_points(ctx, config_from_key("A=1"), "prune");
  EXPECT_EQ(points_called(r).size(), 3u);

  ReplayEvaluator no_budgets(table({point("A=1,MEM=4", 150, 3.0), point("A=1,MEM=8", 116.5, 3.6)}));
  SearchContext none(m, no_budgets, opts());
  evaluate_memory_points(none, config_from_key("A=1"), "prune");
  EXPECT_EQ(points_called(no_budgets).size(), 3u) << "4, 8, 16 (not in the table): no refinement";
}

// A wide gap is halved, at most twice per budget: 0 ran out of memory, 16 fits; 8 is over,
// 12 fits, and 10 (a third step) is not tried.
TEST_F(MemoryCliffTest, HalvesAnOutOfMemoryGapAtMostTwicePerBudget) {
  auto oom = row("A=1,MEM=0", "oom", 0);
  Manifest m = dial();
  for (auto& sw : m.switches) {
    if (sw.name == "MEM") sw.values = {"-1", "0", "16"};
  }
  ReplayEvaluator r(table({oom, point("A=1,MEM=16", 60, 3.0), row("A=1,MEM=8", "oom", 0),
                           point("A=1,MEM=12", 70, 3.1)}));
  SearchOptions o = opts();
  o.budget_bytes = {141 * kGiB};
  SearchContext ctx(m, r, o);
  evaluate_memory_points(ctx, config_from_key("A=1"), "prune");
  const std::vector<Call> want = {
      {"A=1,MEM=0", 4}, {"A=1,MEM=16", 4}, {"A=1,MEM=8", 4}, {"A=1,MEM=12", 4}};
  EXPECT_EQ(points_called(r), want);
}

// A dial on which more means more memory (a cache size), with its default (64) among its
// values and a requirement (B=1): the default is a point of its own, and between 16 (fits)
// and the pruned 256 the line toward 100 GiB is followed downward (rounded toward 16).
TEST_F(MemoryCliffTest, FollowsADialThatGrowsMemoryAndNeedsAnotherSwitch) {
  nlohmann::json raw = load("recorded_manifest.json");
  raw["switches"].push_back({{"name", "CACHE"},
                             {"env", "SG_CACHE"},
                             {"type", "int"},
                             {"min", 1},
                             {"max", 1024},
                             {"values", nlohmann::json::array({"16", "64", "256"})},
                             {"default", "64"},
                             {"requires", nlohmann::json::array({"B=1"})},
                             {"identity", "bitwise"},
                             {"effect", "memory"},
                             {"available", true}});
  Manifest m = parse_manifest(raw);
  for (auto& sw : m.switches) {
    if (sw.name == "MEM") sw.available = false;
  }
  auto pruned = row("A=1,B=1,CACHE=256", "pruned", 0);
  pruned["projected_peak_bytes"] = 160 * kGiB;
  ReplayEvaluator r(table({point("A=1", 40, 2.0), point("A=1,B=1,CACHE=16", 30, 1.9), pruned,
                           point("A=1,B=1,CACHE=160", 99, 2.0)}));
  SearchOptions o = opts();
  o.budget_bytes = {100 * kGiB};
  SearchContext ctx(m, r, o);
  ctx.evaluate(config_from_key("A=1"), 4,
               "stack");  // the combination itself: CACHE at its default 64
  evaluate_memory_points(ctx, config_from_key("A=1"), "prune");
  // 64 (40 GiB) fits, 256 (160 GiB) is pruned: 64 + (100 - 40) / (160 - 40) * 192 = 160.
  const Call searched{"A=1,B=1,CACHE=160", 4};
  EXPECT_NE(std::find(r.calls().begin(), r.calls().end(), searched), r.calls().end());
}

// The campaign hands its budgets to the search largest first, whatever their order on the
// command line, so a resumed campaign searches in the same order.
TEST(SearchOptionsOfACampaign, CarryTheBudgetsLargestFirst) {
  CampaignOptions c;
  c.memory.budgets = {{"fast_80gb", 80}, {"fast", 141}, {"small", 24}};
  c.trial.steps = 6;
  c.search.prune_rounds = 1;
  const SearchOptions so = search_options(c, true);
  EXPECT_EQ(so.budget_bytes, (std::vector<double>{141, 80, 24}));
  EXPECT_EQ(so.full_steps, 6);
  EXPECT_EQ(so.prune_rounds, 1);
  EXPECT_TRUE(so.rank_at_target);
}

}  // namespace
}  // namespace sg::agent
