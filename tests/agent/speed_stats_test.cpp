// The speed verdict's statistics (agent/gate/speed_stats.hpp): t quantiles, the interval,
// the sequential rule and the host-noise figure, on fixed numbers (no timing here).
#include "agent/gate/speed_stats.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace sg::agent {
namespace {

std::vector<SpeedPair> pairs_with_ratios(const std::vector<double>& ratios) {
  std::vector<SpeedPair> out;
  for (double r : ratios) out.push_back({1.0, 1.0 / r});  // candidate r times faster
  return out;
}

TEST(SpeedStats, StudentTQuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.95, 1), 6.3138, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.99, 5), 3.3649, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.8, 7), 0.8960, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.05, 4), -2.1318, 1e-3);
  EXPECT_TRUE(std::isnan(student_t_quantile(0.95, 0)));
}

TEST(SpeedStats, ConsistentTenPercentIsFaster) {
  SpeedRule rule;
  SpeedInterval v = judge_pairs(pairs_with_ratios({1.10, 1.11, 1.09}), rule);
  EXPECT_EQ(v.call, SpeedCall::faster);
  EXPECT_NEAR(v.speedup, std::exp((std::log(1.10) + std::log(1.11) + std::log(1.09)) / 3), 1e-12);
  EXPECT_GT(v.lo, 1.02);
  EXPECT_LT(v.lo, v.speedup);
  EXPECT_GT(v.hi, v.speedup);
  EXPECT_NE(v.text().find("95 %, 3 pairs"), std::string::npos) << v.text();
}

// The old rule (median of 3 ratios above 2 %) accepted this: one lucky pair decided it.
TEST(SpeedStats, AWildPairDoesNotMakeAVerdict) {
  SpeedRule rule;
  SpeedInterval v = judge_pairs(pairs_with_ratios({1.571, 1.03, 0.976}), rule);
  EXPECT_EQ(v.call, SpeedCall::undecided);
  EXPECT_FALSE(speed_settled(v, rule)) << "below the cap: add a pair";
  rule.max_pairs = 3;
  EXPECT_TRUE(speed_settled(v, rule)) << "at the cap: inconclusive";
}

TEST(SpeedStats, ClearlyNoFasterIsNotFaster) {
  SpeedRule rule;
  SpeedInterval v = judge_pairs(pairs_with_ratios({0.99, 1.0, 1.005, 0.995}), rule);
  EXPECT_EQ(v.call, SpeedCall::not_faster);
  EXPECT_LT(v.hi, 1.02);
}

TEST(SpeedStats, NoVerdictBeforeTheMinimumPairs) {
  SpeedRule rule;
  rule.min_pairs = 4;
  EXPECT_EQ(judge_pairs(pairs_with_ratios({1.5, 1.5, 1.5000001}), rule).call, SpeedCall::undecided);
  SpeedInterval one = judge_pairs(pairs_with_ratios({1.5}), rule);
  EXPECT_TRUE(std::isinf(one.hi));
}

TEST(SpeedStats, MoreLooksWidenEachLook) {
  SpeedRule few, many;
  few.max_pairs = few.min_pairs;  // one look
  many.max_pairs = 16;            // fourteen looks share the error rate
  const auto p = pairs_with_ratios({1.04, 1.06, 1.05, 1.03, 1.07});
  EXPECT_LT(judge_pairs(p, many).lo, judge_pairs(p, few).lo);
}

TEST(SpeedStats, LooksAreFewAndSpacedEndingAtTheCap) {
  SpeedRule rule;  // 3..8 pairs
  EXPECT_EQ(rule.look_points(), (std::vector<int>{3, 5, 8}));
  EXPECT_DOUBLE_EQ(rule.alpha_per_look(), 0.05 / 3);
  rule.min_pairs = 2;
  rule.max_pairs = 16;
  EXPECT_EQ(rule.look_points(), (std::vector<int>{2, 4, 7, 12, 16}));
  rule.min_pairs = 1;  // one pair has no spread: the first look is at two
  rule.max_pairs = 8;
  EXPECT_EQ(rule.look_points(), (std::vector<int>{2, 4, 7, 8}));
  rule.min_pairs = rule.max_pairs = 3;
  EXPECT_EQ(rule.look_points(), (std::vector<int>{3}));
  rule.min_pairs = 5, rule.max_pairs = 3;  // more minimum pairs than the cap: one look at the cap
  EXPECT_EQ(rule.look_points(), (std::vector<int>{3}));
}

TEST(SpeedStats, NoVerdictBetweenLooks) {
  SpeedRule rule;  // looks at 3, 5, 8
  // Four pairs that would be decided if judged: 4 is not a look, so the rule adds a pair.
  const auto four = pairs_with_ratios({1.30, 1.31, 1.29, 1.30});
  SpeedInterval v;
  EXPECT_EQ(judge_pairs(four, rule).call, SpeedCall::faster);
  EXPECT_FALSE(speed_stops(four, rule, &v));
  const auto five = pairs_with_ratios({1.30, 1.31, 1.29, 1.30, 1.30});
  ASSERT_TRUE(speed_stops(five, rule, &v));
  EXPECT_EQ(v.call, SpeedCall::faster);
  EXPECT_EQ(v.pairs, 5);
}

TEST(SpeedStats, SteadyStepSecondsDropWarmUpAndTakeTheMedian) {
  std::vector<StepRecord> steps(8);
  const double s[] = {5.0, 3.0, 1.0, 1.2, 0.9, 1.1, 1.0, 9.0};
  for (int i = 0; i < 8; ++i) steps[i].seconds = s[i];
  // The first quarter (2 steps) is warm-up; the median of the other six is 1.05.
  EXPECT_DOUBLE_EQ(steady_step_seconds(steps), 1.05);
  EXPECT_DOUBLE_EQ(steady_step_seconds({}), 0.0);
}

TEST(SpeedStats, HostNoiseStatesTheDetectableSpeedup) {
  SpeedRule rule;  // min effect 2 %, 3..8 pairs
  HostNoise quiet = measure_noise(pairs_with_ratios({1.001, 0.999, 1.0, 1.0005}), rule);
  HostNoise noisy = measure_noise(pairs_with_ratios({1.08, 0.93, 1.05, 0.96}), rule);
  EXPECT_LT(quiet.resolution, 0.01);
  EXPECT_GT(noisy.resolution, 0.05);
  EXPECT_GT(noisy.detectable_speedup, 1.0 + rule.min_effect + noisy.resolution - 1e-9);
  EXPECT_NE(noisy.text().find("smallest detectable speedup"), std::string::npos);
}

}  // namespace
}  // namespace sg::agent
