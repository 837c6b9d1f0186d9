// Each search strategy on the recorded trial table (simulation mode: no trainer):
// screen, halving, local, greedy, the minifier and stack, and the budget that stops them.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "search_support.hpp"

namespace sg::agent {
namespace {

using test::Call;
using test::SearchTest;
using test::stack_rows;
using test::table;

TEST_F(SearchTest, RegistryHasEveryStrategy) {
  auto names = StrategyRegistry::instance().names();
  for (const char* n :
       {"screen", "halving", "local", "greedy", "minify", "stack", "prune", "finals"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_FALSE(StrategyRegistry::instance().summary(n).empty());
  }
  EXPECT_EQ(StrategyRegistry::instance().create("nope"), nullptr);
}

TEST_F(SearchTest, ScreenTriesEachAvailableSwitchAloneWithItsRequires) {
  SearchContext ctx(manifest, replay, opts());
  ctx.run_strategy("screen");
  std::vector<Call> want = {{"A=1", 1},   {"B=1", 1},   {"A=1,C=1", 1},
                            {"BAD=1", 1}, {"MEM=2", 1}, {"W=1", 1}};
  EXPECT_EQ(replay.calls(), want);  // U is unavailable: never tried
  EXPECT_EQ(config_key(ctx.screened.at("C")), "A=1,C=1");
}

TEST_F(SearchTest, HalvingPromotesTheFasterHalfAndKeepsMemoryTradeoffs) {
  SearchContext ctx(manifest, replay, opts());
  ctx.run_strategy("screen");
  ctx.run_strategy("halving");
  // Rung 2 steps: all five accepted screens. Rung 4 steps: the two fastest + MEM.
  for (const char* k : {"A=1", "B=1", "A=1,C=1", "MEM=2", "W=1"}) EXPECT_TRUE(called(k, 2)) << k;
  EXPECT_TRUE(called("A=1,C=1", 4));
  EXPECT_TRUE(called("A=1", 4));
  EXPECT_TRUE(called("MEM=2", 4));
  EXPECT_FALSE(called("B=1", 4));
  EXPECT_FALSE(called("W=1", 4));
  EXPECT_FALSE(called("BAD=1", 2));  // failed the gate at the first rung
  EXPECT_EQ(ctx.best_single.size(), 3u);
  EXPECT_DOUBLE_EQ(ctx.best_single.at("C").speedup, 1.4);
}

TEST_F(SearchTest, LocalFindsTheBestIntValueWithoutRepeats) {
  SearchContext ctx(manifest, replay, opts());
  ctx.run_strategy("local");
  ASSERT_TRUE(ctx.best_single.count("W"));
  EXPECT_EQ(config_key(ctx.best_single.at("W").config), "W=4");
  EXPECT_DOUBLE_EQ(ctx.best_single.at("W").speedup, 1.15);
  std::set<Call> unique(replay.calls().begin(), replay.calls().end());
  EXPECT_EQ(unique.size(), replay.calls().size()) << "no configuration evaluated twice";
  EXPECT_TRUE(called("MEM=2", 4));
  EXPECT_TRUE(called("MEM=4", 4));
  for (const auto& [key, steps] : replay.calls()) EXPECT_EQ(steps, 4) << key;
}

TEST_F(SearchTest, LocalRespectsItsEvaluationBudget) {
  SearchOptions o = opts();
  o.local_max_evals = 1;
  SearchContext ctx(manifest, replay, o);
  ctx.run_strategy("local");
  EXPECT_EQ(replay.calls().size(), 2u);  // one per int switch
}

TEST_F(SearchTest, GreedyCombinesInOrderOfGainAndMinifiesFailures) {
  SearchContext ctx(manifest, replay, opts());
  for (const char* s : {"screen", "halving", "local", "greedy"}) ctx.run_strategy(s);
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,C=1");
  EXPECT_TRUE(called("A=1,C=1,W=4", 4));  // re-gated: failed
  ASSERT_EQ(ctx.conflicts.size(), 1u);    // the minifier isolated the pair
  EXPECT_EQ(config_key(ctx.conflicts[0]), "A=1,W=4");
  EXPECT_TRUE(called("A=1,C=1,MEM=2", 4));  // memory trade-off on top of the best
}

TEST_F(SearchTest, MinifierIsolatesTheBreakingPair) {
  SearchContext ctx(manifest, replay, opts());
  ctx.pending_minify.push_back(config_from_key("A=1,C=1,W=4"));
  ctx.run_strategy("minify");
  ASSERT_EQ(ctx.conflicts.size(), 1u);
  EXPECT_EQ(config_key(ctx.conflicts[0]), "A=1,W=4");
  EXPECT_TRUE(ctx.contains_conflict(config_from_key("A=1,B=1,W=4")));
  EXPECT_FALSE(ctx.contains_conflict(config_from_key("A=1,W=2")));
}

TEST_F(SearchTest, MinifierIsolatesASingleSwitch) {
  nlohmann::json t = {
      {"entries",
       {{{"config", {{"BAD", "1"}, {"B", "1"}}}, {"steps", 4}, {"disposition", "gate_failed"}},
        {{"config", {{"BAD", "1"}}}, {"steps", 4}, {"disposition", "gate_failed"}},
        {{"config", {{"B", "1"}}}, {"steps", 4}, {"disposition", "accepted"}, {"speedup", 1.1}}}}};
  ReplayEvaluator r(t);
  SearchContext ctx(manifest, r, opts());
  ctx.pending_minify.push_back(config_from_key("B=1,BAD=1"));
  ctx.run_strategy("minify");
  ASSERT_EQ(ctx.conflicts.size(), 1u);
  EXPECT_EQ(config_key(ctx.conflicts[0]), "BAD=1");
}

// "stack": all bitwise speed/schedule switches at once (BAD breaks it: minified, left out),
// then with the tolerance switch C, then each memory value on top of the best.
TEST_F(SearchTest, StackCombinesMinifiesThenAddsMemoryValues) {
  ReplayEvaluator r(table(stack_rows()));
  SearchContext ctx(manifest, r, opts());
  ctx.run_strategy("stack");
  std::vector<Call> want = {{"A=1,B=1,BAD=1,W=4", 4},
                            {"B=1,BAD=1,W=4", 4},
                            {"BAD=1,W=4", 4},
                            {"W=4", 4},
                            {"BAD=1", 4},
                            {"A=1,B=1,W=4", 4},
                            {"A=1,B=1,C=1,W=4", 4},
                            {"A=1,B=1,C=1,MEM=2,W=4", 4},
                            {"A=1,B=1,C=1,MEM=4,W=4", 4}};
  EXPECT_EQ(r.calls(), want);  // U is unavailable: never in a combination
  ASSERT_EQ(ctx.conflicts.size(), 1u);
  EXPECT_EQ(config_key(ctx.conflicts[0]), "BAD=1");
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,B=1,C=1,W=4");
}

TEST_F(SearchTest, StackKeepsTheBitwiseSetWhenToleranceGainsNothing) {
  nlohmann::json t = {{"entries",
                       {{{"config", {{"A", "1"}, {"B", "1"}, {"BAD", "1"}, {"W", "4"}}},
                         {"steps", 4},
                         {"disposition", "accepted"},
                         {"speedup", 1.5}},
                        {{"config", {{"A", "1"}, {"B", "1"}, {"BAD", "1"}, {"C", "1"}, {"W", "4"}}},
                         {"steps", 4},
                         {"disposition", "accepted"},
                         {"speedup", 1.51}}}}};
  ReplayEvaluator r(t);
  SearchContext ctx(manifest, r, opts());
  ctx.run_strategy("stack");
  EXPECT_EQ(config_key(ctx.best_combination),
            "A=1,B=1,BAD=1,W=4");  // +0.7 % is below the noise threshold
}

TEST_F(SearchTest, BudgetStopsTheSearch) {
  replay.budget = 3;
  SearchContext ctx(manifest, replay, opts());
  EXPECT_THROW(ctx.run_strategy("screen"), BudgetExhausted);
  EXPECT_EQ(replay.calls().size(), 3u);
}

}  // namespace
}  // namespace sg::agent
