// Ranking what the search found: the Pareto frontier and each budget's pick, the finalists
// the finals pair at the target, and replaying a stored campaign.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "agent/ranking/pareto.hpp"
#include "agent/search/finals.hpp"
#include "agent/store/store.hpp"
#include "search_support.hpp"
#include "store_support.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

TEST(Pareto, FrontierAndBudgetPick) {
  std::vector<FrontierPoint> pts = {{1, 1.0, 90, 0}, {2, 1.4, 90, 2},  {3, 1.3, 90, 1},
                                    {4, 0.9, 50, 1}, {5, 0.85, 30, 1}, {6, 1.26, 50, 3}};
  std::vector<std::int64_t> ids;
  for (auto i : pareto_frontier(pts)) ids.push_back(pts[i].id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{5, 6, 2}));
  EXPECT_EQ(pts[*pick_for_budget(pts, 141)].id, 2);
  EXPECT_EQ(pts[*pick_for_budget(pts, 80)].id, 6);
  EXPECT_EQ(pts[*pick_for_budget(pts, 40)].id, 5);
  EXPECT_FALSE(pick_for_budget(pts, 20).has_value());
}

// A point without a projected peak (its memory was not probed) is on no frontier and fits
// no budget, however fast.
TEST(Pareto, UnprobedPointsAreOnNoFrontierAndFitNoBudget) {
  const double unprobed = std::nan("");
  std::vector<FrontierPoint> pts = {{1, 1.2, 50, 1}, {2, 3.0, unprobed, 1}, {3, 1.1, 40, 1}};
  std::vector<std::int64_t> ids;
  for (auto i : pareto_frontier(pts)) ids.push_back(pts[i].id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(pts[*pick_for_budget(pts, 141)].id, 1);
}

TEST(Pareto, TieGoesToFewerSwitches) {
  std::vector<FrontierPoint> pts = {{1, 1.2, 50, 3}, {2, 1.2, 50, 1}};
  EXPECT_EQ(pts[*pick_for_budget(pts, 60)].id, 2);
  auto f = pareto_frontier(pts);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(pts[f[0]].id, 2);
}

// Finals pick the ranking's tier before its speedup: a budget's paired finalists and its
// baseline (tier 1) outrank a configuration whose unpaired probe looked faster.
TEST(Pareto, HigherTierWinsBeforeSpeedup) {
  std::vector<FrontierPoint> pts = {
      {1, 1.0, 50, 0, 1}, {2, 1.3, 50, 2, 1}, {3, 1.6, 50, 2, 0}, {4, 1.4, 90, 1, 1}};
  EXPECT_EQ(pts[*pick_for_budget(pts, 60)].id, 2);
  EXPECT_EQ(pts[*pick_for_budget(pts, 100)].id, 4);
  pts[1].speedup = 0.9;  // a finalist slower than the baseline at the target: the baseline
  EXPECT_EQ(pts[*pick_for_budget(pts, 60)].id, 1);
  // The frontier itself does not use tiers.
  std::vector<std::int64_t> ids;
  for (auto i : pareto_frontier(pts)) ids.push_back(pts[i].id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{3}));
}

namespace {

EvaluationRow accepted_row(std::int64_t id, const std::string& key, double speedup, double peak,
                           int steps = 8) {
  EvaluationRow e;
  e.id = id;
  e.config_key = key;
  e.steps = steps;
  e.disposition = Disposition::accepted;
  e.speedup = speedup;
  e.projected_peak_bytes = peak;
  return e;
}

std::vector<std::int64_t> ids_of(const BudgetFinalists& f) {
  std::vector<std::int64_t> out;
  for (const auto* e : f.finalists) out.push_back(e->id);
  return out;
}

}  // namespace

TEST(Finals, EachBudgetsLeadersByRankThatFitItNotTheBaseline) {
  std::vector<EvaluationRow> evals = {
      accepted_row(1, "", 1.0, 50),         accepted_row(2, "A=1", 1.5, 90),
      accepted_row(3, "A=1,C=2", 1.2, 40),  accepted_row(4, "B=1", 1.3, 70),
      accepted_row(5, "A=1,B=1", 1.9, 120), accepted_row(6, "D=1", 2.5, 30, 4),
      accepted_row(7, "E=1", 1.25, 40)};
  evals.push_back(accepted_row(8, "F=1", 3.0, 30));
  evals.back().disposition = Disposition::slower;
  std::map<std::int64_t, TargetRank> ranks;
  for (const auto& e : evals) ranks[e.id].speedup = e.speedup;
  ranks[7].speedup = 1.35;  // ranked by its probe above its campaign speedup
  const auto chosen =
      choose_finalists(evals, ranks, {{"big", 141}, {"small", 80}, {"tiny", 10}}, 8, 2, false);
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(ids_of(chosen[0]), (std::vector<std::int64_t>{5, 2}));
  EXPECT_EQ(ids_of(chosen[1]), (std::vector<std::int64_t>{7, 4}));
  EXPECT_TRUE(chosen[1].skipped.empty());
  EXPECT_TRUE(chosen[2].finalists.empty());
  EXPECT_EQ(chosen[2].skipped, "no accepted configuration fits it");
}

TEST(Finals, WithProbesOnlyWhatRanAtTheTargetAndNoneWhenTheLeaderDidNot) {
  std::vector<EvaluationRow> evals = {accepted_row(1, "", 1.0, 50), accepted_row(2, "A=1", 1.5, 70),
                                      accepted_row(3, "B=1", 1.4, 70),
                                      accepted_row(4, "C=1", 1.3, 70),
                                      accepted_row(5, "D=1", 1.8, 120)};
  std::map<std::int64_t, TargetRank> ranks;
  for (const auto& e : evals) ranks[e.id] = {e.speedup, 0, TargetRank::Basis::probe, 0, 32};
  ranks[3].basis = TargetRank::Basis::campaign;  // its probe fell back: it did not run at 32
  ranks[5].basis = TargetRank::Basis::campaign;
  const auto chosen = choose_finalists(evals, ranks, {{"small", 80}, {"big", 141}}, 8, 2, true);
  EXPECT_EQ(ids_of(chosen[0]), (std::vector<std::int64_t>{2, 4}));  // B=1 passed over
  EXPECT_TRUE(chosen[1].finalists.empty());
  EXPECT_NE(chosen[1].skipped.find("D=1"), std::string::npos) << chosen[1].skipped;
  // Without probes nothing is known about the target: the leaders are tried.
  const auto tried = choose_finalists(evals, ranks, {{"big", 141}}, 8, 2, false);
  EXPECT_EQ(ids_of(tried[0]), (std::vector<std::int64_t>{5, 2}));
}

TEST(Replay, FromAStoredCampaign) {
  std::string dir = test::make_temp_dir("replay");
  {
    Store s(dir + "/sg.db");
    auto cid = s.create_campaign(test::campaign_row("x"));
    EvaluationRow e;
    e.campaign_id = cid;
    e.strategy = "screen";
    e.config_key = "A=1";
    e.steps = 4;
    e.disposition = Disposition::accepted;
    e.gate_class = "bitwise";
    e.speedup = 1.25;
    s.add_evaluation(e);
    ReplayEvaluator r = ReplayEvaluator::from_store(s, cid);
    Evaluation got = r.evaluate(config_from_key("A=1"), 4, "test", Measure::full);
    EXPECT_EQ(got.disposition, Disposition::accepted);
    EXPECT_DOUBLE_EQ(got.speedup, 1.25);
    EXPECT_EQ(r.evaluate(config_from_key("B=1"), 4, "test", Measure::full).disposition,
              Disposition::crash);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
