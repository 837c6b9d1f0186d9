// The speed rule on real noisy pairs recorded on this project's 2-core machine while it
// ran parallel builds and test suites (tests/agent/data/speed_pairs/, made with
// benchmarks/gate/record_pairs.py): replays are deterministic, so these verdicts are
// asserted exactly where a live timing test could only be flaky.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"

namespace sg::agent {
namespace {

// Each evaluation's pairs as (baseline, candidate) steady-state step seconds.
std::vector<std::vector<SpeedPair>> recording(const std::string& name) {
  std::ifstream in(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/speed_pairs/" + name);
  const auto j = nlohmann::json::parse(in);
  std::vector<std::vector<SpeedPair>> out;
  for (const auto& ev : j.at("evaluations")) {
    std::vector<SpeedPair> pairs;
    for (const auto& p : ev) {
      std::vector<StepRecord> base, cand;
      for (double s : p.at("base")) base.push_back({0, 0, 0, 0, 0, s});
      for (double s : p.at("cand")) cand.push_back({0, 0, 0, 0, 0, s});
      pairs.push_back({steady_step_seconds(base), steady_step_seconds(cand)});
    }
    out.push_back(pairs);
  }
  return out;
}

// The rule this project used before: the median of three pair ratios above 2 %.
bool median_of_three_accepts(const std::vector<SpeedPair>& pairs) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < 3 && i < pairs.size(); ++i)
    ratios.push_back(pairs[i].base_step_s / pairs[i].cand_step_s);
  return median(ratios) > 1.02;
}

TEST(SpeedReplay, NoAANoiseIsEverAcceptedWhereTheMedianRuleWasFooled) {
  const auto evals = recording("aa_loaded.json");
  ASSERT_EQ(evals.size(), 12u);
  const SpeedRule rule;  // defaults: 2 %, 3..8 pairs
  int accepted = 0, fooled_before = 0;
  for (const auto& pairs : evals) {
    ASSERT_EQ(pairs.size(), 8u);
    const SpeedInterval v = replay_speed(pairs, rule);
    if (v.call == SpeedCall::faster) ++accepted;
    if (median_of_three_accepts(pairs)) ++fooled_before;
  }
  EXPECT_EQ(accepted, 0) << "a switch that does nothing was accepted as faster";
  EXPECT_GE(fooled_before, 3) << "the recording is noisy enough to fool the old rule";
}

TEST(SpeedReplay, ARealSpeedupIsAcceptedOnlyWithItsBoundAboveTheThreshold) {
  const auto evals = recording("effect10_loaded.json");
  ASSERT_EQ(evals.size(), 12u);
  const SpeedRule rule;
  int accepted = 0, rejected = 0;
  for (const auto& pairs : evals) {
    const SpeedInterval v = replay_speed(pairs, rule);
    if (v.call == SpeedCall::faster) {
      ++accepted;
      EXPECT_GE(v.lo, 1.0 + rule.min_effect) << v.text();
      EXPECT_LE(v.pairs, rule.max_pairs);
    }
    if (v.call == SpeedCall::not_faster) ++rejected;
  }
  EXPECT_GE(accepted, 1) << "the skipped work (SKIP_REDUNDANT) is a real gain";
  EXPECT_EQ(rejected, 0) << "a real speedup is never called not faster";
}

TEST(SpeedReplay, TheSequentialRuleStopsWhereTheCampaignWould) {
  // Replaying a prefix-decided sequence uses only the pairs up to the decision.
  std::vector<SpeedPair> clear = {{1.10, 1.0}, {1.11, 1.0}, {1.09, 1.0}, {0.5, 1.0}, {0.5, 1.0}};
  const SpeedInterval v = replay_speed(clear, SpeedRule{});
  EXPECT_EQ(v.pairs, 3);
  EXPECT_EQ(v.call, SpeedCall::faster);
}

}  // namespace
}  // namespace sg::agent
