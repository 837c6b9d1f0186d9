// Every search strategy, replaying a recorded trial table (simulation mode: no
// trainer). The table is tests/agent/data/recorded_trials.json.
#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "agent/campaign/campaign.hpp"
#include "agent/common/files.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/search/finals.hpp"
#include "agent/search/memory_points.hpp"
#include "agent/search/replay.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

using Call = std::pair<std::string, int>;

bool called_in(const ReplayEvaluator& r, const std::string& key, int steps) {
  const auto& c = r.calls();
  return std::find(c.begin(), c.end(), Call{key, steps}) != c.end();
}

nlohmann::json load(const std::string& name) {
  auto text = read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/" + name);
  return nlohmann::json::parse(text.value());
}

// One recorded evaluation at 4 steps (the tests' full_steps).
nlohmann::json row(const char* key, const char* disposition, double speedup) {
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [k, v] : config_from_key(key)) config[k] = v;
  return nlohmann::json{
      {"config", config}, {"steps", 4}, {"disposition", disposition}, {"speedup", speedup}};
}

// What "stack" meets on the recorded manifest: BAD breaks the bitwise set, which is minified
// and left out; the best is A=1,B=1,C=1,W=4 at 1.6x.
std::vector<nlohmann::json> stack_rows() {
  return {row("A=1,B=1,BAD=1,W=4", "gate_failed", 0),
          row("B=1,BAD=1,W=4", "gate_failed", 0),
          row("BAD=1,W=4", "gate_failed", 0),
          row("W=4", "accepted", 1.1),
          row("BAD=1", "gate_failed", 0),
          row("A=1,B=1,W=4", "accepted", 1.5),
          row("A=1,B=1,C=1,W=4", "accepted", 1.6),
          row("A=1,B=1,C=1,MEM=2,W=4", "accepted", 1.7),
          row("A=1,B=1,C=1,MEM=4,W=4", "accepted", 1.8)};
}

nlohmann::json table(std::vector<nlohmann::json> rows) { return {{"entries", rows}}; }

// stack_rows() plus what "prune" meets after it: dropping B is faster (1.7x), every other
// drop slower; the memory values on the pruned A=1,C=1,W=4.
std::vector<nlohmann::json> stack_then_prune_rows() {
  auto rows = stack_rows();
  for (auto r : {row("B=1,W=4", "accepted", 1.2), row("A=1,C=1,W=4", "accepted", 1.7),
                 row("A=1,B=1,C=1", "accepted", 1.3), row("A=1,W=4", "accepted", 1.4),
                 row("A=1,C=1", "accepted", 1.4), row("A=1,C=1,MEM=2,W=4", "accepted", 1.75),
                 row("A=1,C=1,MEM=4,W=4", "accepted", 1.8)}) {
    rows.push_back(r);
  }
  return rows;
}

struct SearchTest : ::testing::Test {
  Manifest manifest = parse_manifest(load("recorded_manifest.json"));
  ReplayEvaluator replay{load("recorded_trials.json")};
  SearchOptions opts() {
    SearchOptions o;
    o.screen_steps = 1;
    o.full_steps = 4;
    return o;
  }
  bool called(const std::string& key, int steps) { return called_in(replay, key, steps); }
  // Strategy prune run on `r` from the combination `start`.
  SearchContext pruned_from(ReplayEvaluator& r, const char* start, const SearchOptions& o) {
    SearchContext ctx(manifest, r, o);
    ctx.best_combination = config_from_key(start);
    ctx.run_strategy("prune");
    return ctx;
  }
};

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

// "prune" after "stack": drops B (the stack is faster without it), then stops: every other
// drop is slower beyond noise. Dropping A takes C along (C requires A). Evaluations stack
// made are looked up, not repeated; the drop taken is evaluated again with its memory probe
// (drops are compared without one); the memory values go on the pruned combination.
TEST_F(SearchTest, PruneAfterStackDropsTheMemberThatMakesItSlower) {
  ReplayEvaluator r(table(stack_then_prune_rows()));
  SearchContext ctx(manifest, r, opts());
  ctx.run_strategy("stack");
  const std::size_t after_stack = r.calls().size();
  ctx.run_strategy("prune");
  std::vector<Call> pruning(r.calls().begin() + static_cast<std::ptrdiff_t>(after_stack),
                            r.calls().end());
  std::vector<Call> want = {{"B=1,W=4", 4},           {"A=1,C=1,W=4", 4},
                            {"A=1,B=1,C=1", 4},  // round 1 (A=1,B=1,W=4 known)
                            {"A=1,C=1,W=4", 4},  // the drop taken, probed
                            {"A=1,W=4", 4},           {"A=1,C=1", 4},  // round 2 (W=4 known)
                            {"A=1,C=1,MEM=2,W=4", 4}, {"A=1,C=1,MEM=4,W=4", 4}};  // frontier points
  EXPECT_EQ(pruning, want);
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,C=1,W=4");
}

// With "prune" later in the plan, "stack" leaves the memory values to it: the campaign pays
// for one set of memory points, on the combination prune keeps (on the H200 the stack's own
// set was 9 of 44 evaluations).
TEST_F(SearchTest, StackLeavesTheMemoryValuesToALaterPrune) {
  ReplayEvaluator r(table(stack_then_prune_rows()));
  SearchContext ctx(manifest, r, opts());
  ctx.plan = {"stack", "prune", "finals"};
  ctx.run_strategy("stack");
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,B=1,C=1,W=4");
  ctx.run_strategy("prune");
  for (const char* stack_point : {"A=1,B=1,C=1,MEM=2,W=4", "A=1,B=1,C=1,MEM=4,W=4"}) {
    EXPECT_FALSE(called_in(r, stack_point, 4)) << stack_point;
  }
  for (const char* pruned_point : {"A=1,C=1,MEM=2,W=4", "A=1,C=1,MEM=4,W=4"}) {
    EXPECT_TRUE(called_in(r, pruned_point, 4)) << pruned_point;
  }
  // Only a prune after it counts: stack after prune (or without it) keeps its own points.
  ReplayEvaluator again(table(stack_rows()));
  SearchContext before(manifest, again, opts());
  before.plan = {"prune", "stack"};
  before.run_strategy("stack");
  EXPECT_TRUE(called_in(again, "A=1,B=1,C=1,MEM=4,W=4", 4));
}

TEST_F(SearchTest, PruneKeepsEveryMemberThatHelps) {
  ReplayEvaluator r(table({row("A=1,B=1,W=4", "accepted", 1.5), row("B=1,W=4", "accepted", 1.1),
                           row("A=1,W=4", "accepted", 1.4), row("A=1,B=1", "accepted", 1.3)}));
  SearchContext ctx(manifest, r, opts());
  ctx.best_combination = config_from_key("A=1,B=1,W=4");
  ctx.run_strategy("prune");
  std::vector<Call> want = {{"A=1,B=1,W=4", 4}, {"B=1,W=4", 4},           {"A=1,W=4", 4},
                            {"A=1,B=1", 4},     {"A=1,B=1,MEM=2,W=4", 4}, {"A=1,B=1,MEM=4,W=4", 4}};
  EXPECT_EQ(r.calls(), want);  // one round: -6.7 % at best is slower beyond noise
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,B=1,W=4");
}

// The threshold is "not slower beyond noise": B costs 1.3 % (noise), so it goes (fewer
// switches at the same speed). W then costs 1.4 % more, inside the noise of the current
// combination but 2.7 % below the fastest measured (with B): it stays, so the losses of
// successive drops do not add up.
TEST_F(SearchTest, PruneDropsMembersWithinNoiseButDoesNotDriftDown) {
  ReplayEvaluator r(table({row("A=1,B=1,W=4", "accepted", 1.5), row("B=1,W=4", "accepted", 1.1),
                           row("A=1,W=4", "accepted", 1.48), row("A=1,B=1", "accepted", 1.3),
                           row("W=4", "accepted", 1.1), row("A=1", "accepted", 1.46)}));
  SearchContext ctx(manifest, r, opts());
  ctx.best_combination = config_from_key("A=1,B=1,W=4");
  ctx.run_strategy("prune");
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,W=4");
  EXPECT_TRUE(called_in(r, "A=1", 4)) << "W was tried";
  EXPECT_TRUE(called_in(r, "A=1,MEM=2,W=4", 4)) << "frontier points on the pruned combination";
}

// Two members are each harmless to drop (A, B): both go at once in one evaluation, and
// when that holds pruning ends there, without a second round.
TEST_F(SearchTest, PruneDropsEveryHarmlessMemberAtOnce) {
  ReplayEvaluator r(table({row("A=1,B=1,W=4", "accepted", 1.5), row("B=1,W=4", "accepted", 1.49),
                           row("A=1,W=4", "accepted", 1.48), row("A=1,B=1", "accepted", 1.2),
                           row("W=4", "accepted", 1.49)}));
  SearchContext ctx(manifest, r, opts());
  ctx.best_combination = config_from_key("A=1,B=1,W=4");
  ctx.run_strategy("prune");
  EXPECT_EQ(config_key(ctx.best_combination), "W=4");
  EXPECT_TRUE(called_in(r, "W=4", 4));
  for (const auto& [key, steps] : r.calls())
    EXPECT_NE(key, "") << "no second round (it would try the baseline)";
}

// When all the harmless drops at once are slower, the single best drop is taken and
// rounds go on; with --prune-rounds 1 pruning ends there (the noisy re-measuring of a
// second round is not paid for) and the memory values go on what was kept.
TEST_F(SearchTest, PruneFallsBackToOneDropWhenTheHarmlessTogetherAreSlower) {
  const nlohmann::json rows =
      table({row("A=1,B=1,W=4", "accepted", 1.5), row("B=1,W=4", "accepted", 1.49),
             row("A=1,W=4", "accepted", 1.48), row("A=1,B=1", "accepted", 1.2),
             row("W=4", "accepted", 1.3), row("B=1", "accepted", 1.1)});
  for (int rounds : {0, 1}) {
    ReplayEvaluator r(rows);
    SearchOptions o = opts();
    o.prune_rounds = rounds;
    const SearchContext ctx = pruned_from(r, "A=1,B=1,W=4", o);
    EXPECT_EQ(config_key(ctx.best_combination), "B=1,W=4") << rounds;
    EXPECT_EQ(called_in(r, "B=1", 4), rounds == 0)
        << "a second round on B=1,W=4 unless --prune-rounds 1";
    EXPECT_TRUE(called_in(r, "B=1,MEM=2,W=4", 4)) << rounds;
  }
}

// Drops are compared on speed without their memory probe; only the drop taken is probed,
// so the drops left behind have no projected peak and no place on the frontier.
TEST_F(SearchTest, PruneProbesOnlyTheDropItTakes) {
  auto rows = stack_then_prune_rows();
  for (auto& r : rows) r["projected_peak_bytes"] = 50.0;
  ReplayEvaluator r(table(rows));
  SearchContext ctx(manifest, r, opts());
  ctx.best_combination = config_from_key("A=1,B=1,C=1,W=4");
  ctx.run_strategy("prune");
  ASSERT_EQ(config_key(ctx.best_combination), "A=1,C=1,W=4");
  const Evaluation* taken = ctx.find(config_from_key("A=1,C=1,W=4"), 4);
  ASSERT_NE(taken, nullptr);
  EXPECT_TRUE(taken->memory_probed());
  EXPECT_EQ(taken->projected_peak_bytes, 50.0);
  for (const char* left : {"B=1,W=4", "A=1,B=1,C=1", "A=1,W=4", "A=1,C=1"}) {
    const Evaluation* e = ctx.find(config_from_key(left), 4);
    ASSERT_NE(e, nullptr) << left;
    EXPECT_FALSE(e->memory_probed()) << left;
  }
  EXPECT_TRUE(ctx.find(config_from_key("A=1,C=1,MEM=2,W=4"), 4)->memory_probed())
      << "memory points are probed";
  // Asking for a probed evaluation of one made without the probe evaluates it again, once.
  const std::size_t before = r.calls().size();
  EXPECT_TRUE(ctx.evaluate(config_from_key("A=1,W=4"), 4, "test").memory_probed());
  ctx.evaluate(config_from_key("A=1,W=4"), 4, "test");
  ctx.evaluate(config_from_key("A=1,W=4"), 4, "test", Measure::speed_pairs);
  EXPECT_EQ(r.calls().size(), before + 1);
}

// Where the memory probes run at the target micro-batch, prune compares its drops there
// (target_speedup) and not by the pairs at the measured micro-batch, which on the H200
// disagreed: here the pairs say dropping B is faster and W costs 13 %, the target says B
// costs 15 % and W nothing. The drops are not paired; the one taken is, when evaluated in full.
TEST_F(SearchTest, PruneComparesDropsAtTheTargetWhereTheProbesRunThere) {
  auto at = [](const char* key, double pairs, double target) {
    auto r = row(key, "accepted", pairs);
    r["target_speedup"] = target;
    r["projected_peak_bytes"] = 50.0;
    return r;
  };
  const auto rows =
      table({at("A=1,B=1,W=4", 1.5, 2.0), at("A=1,W=4", 1.55, 1.7), at("B=1,W=4", 1.1, 1.2),
             at("A=1,B=1", 1.3, 2.0), at("B=1", 1.0, 1.1), at("A=1", 1.2, 1.5)});
  ReplayEvaluator r(rows);
  SearchOptions o = opts();
  o.rank_at_target = true;
  const SearchContext ctx = pruned_from(r, "A=1,B=1,W=4", o);
  EXPECT_EQ(config_key(ctx.best_combination), "A=1,B=1") << "W dropped: free at the target";
  EXPECT_TRUE(ctx.find(config_from_key("A=1,B=1"), 4)->paired())
      << "the drop taken, evaluated in full";
  EXPECT_FALSE(ctx.find(config_from_key("A=1,W=4"), 4)->paired()) << "a drop left behind";
  EXPECT_TRUE(ctx.find(config_from_key("A=1,W=4"), 4)->memory_probed());

  ReplayEvaluator by_pairs(rows);
  EXPECT_EQ(config_key(pruned_from(by_pairs, "A=1,B=1,W=4", opts()).best_combination), "A=1,W=4")
      << "without probes at the target: by the pairs";
}

// Memory switches are never dropped, nor is a switch that a memory switch requires
// (OFFLOAD, a memory switch, requires B=1).
TEST_F(SearchTest, PruneLeavesMemorySwitchesAndWhatTheyNeed) {
  nlohmann::json raw = load("recorded_manifest.json");
  raw["switches"].push_back({{"name", "OFFLOAD"},
                             {"env", "SG_OFFLOAD"},
                             {"type", "bool"},
                             {"values", nlohmann::json::array({"0", "1"})},
                             {"default", "0"},
                             {"requires", nlohmann::json::array({"B=1"})},
                             {"identity", "bitwise"},
                             {"effect", "memory"},
                             {"available", true}});
  const Manifest with_offload = parse_manifest(raw);
  ReplayEvaluator r(table({row("A=1,B=1,MEM=2,OFFLOAD=1", "accepted", 1.3),
                           row("B=1,MEM=2,OFFLOAD=1", "accepted", 1.35)}));
  SearchContext ctx(with_offload, r, opts());
  ctx.best_combination = config_from_key("A=1,B=1,MEM=2,OFFLOAD=1");
  ctx.run_strategy("prune");
  std::vector<Call> want = {{"A=1,B=1,MEM=2,OFFLOAD=1", 4},
                            {"B=1,MEM=2,OFFLOAD=1", 4},   // A dropped; B must stay
                            {"B=1,MEM=2,OFFLOAD=1", 4},   // the drop taken, probed
                            {"B=1,MEM=4,OFFLOAD=1", 4}};  // the other MEM value
  EXPECT_EQ(r.calls(), want);
  EXPECT_EQ(config_key(ctx.best_combination), "B=1,MEM=2,OFFLOAD=1");
}

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

TEST_F(SearchTest, PruneWithoutACombinationDoesNothing) {
  SearchContext ctx(manifest, replay, opts());
  ctx.run_strategy("prune");
  EXPECT_TRUE(replay.calls().empty());
  EXPECT_TRUE(ctx.best_combination.empty());
}

TEST_F(SearchTest, BudgetStopsTheSearch) {
  replay.budget = 3;
  SearchContext ctx(manifest, replay, opts());
  EXPECT_THROW(ctx.run_strategy("screen"), BudgetExhausted);
  EXPECT_EQ(replay.calls().size(), 3u);
}

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
    CampaignRow c;
    c.workload = "wam";
    c.size = "tiny";
    c.trainer = "x";
    c.manifest = nlohmann::json::object();
    c.options = nlohmann::json::object();
    auto cid = s.create_campaign(c);
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
