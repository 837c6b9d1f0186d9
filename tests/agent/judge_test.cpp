// The judge (agent/trial/judge.hpp): gate class, memory policy and speed verdicts as pure
// functions, checked with known numbers.
#include "agent/trial/judge.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace sg::agent {
namespace {

Manifest two_switches() {
  Manifest m;
  SwitchSpec fast;
  fast.name = "FAST";
  fast.identity = "bitwise";
  fast.effect = "speed";
  SwitchSpec ckpt;
  ckpt.name = "CKPT";
  ckpt.identity = "tolerance";
  ckpt.effect = "memory";
  m.switches = {fast, ckpt};
  return m;
}

SpeedInterval interval(SpeedCall call) {
  SpeedInterval s;
  s.pairs = 4;
  s.speedup = 1.05;
  s.lo = 1.01;
  s.hi = 1.09;
  s.call = call;
  return s;
}

TEST(Judge, GateClassIsBitwiseOnlyForBitwiseSwitchesInADeterministicEnvironment) {
  const Manifest m = two_switches();
  EXPECT_TRUE(gated_bitwise({{"FAST", "1"}}, m, /*deterministic=*/true));
  EXPECT_FALSE(gated_bitwise({{"FAST", "1"}}, m, /*deterministic=*/false));
  EXPECT_FALSE(gated_bitwise({{"FAST", "1"}, {"CKPT", "1"}}, m, /*deterministic=*/true));
  EXPECT_FALSE(all_bitwise({{"UNKNOWN", "1"}}, m));
  EXPECT_TRUE(has_memory_switch({{"CKPT", "1"}}, m));
  EXPECT_FALSE(has_memory_switch({{"FAST", "1"}}, m));
}

TEST(Judge, OverEveryBudgetPrunesOnlyAboveTheLargest) {
  EXPECT_FALSE(over_every_budget(100, {}));
  EXPECT_FALSE(over_every_budget(100, {50, 100}));
  EXPECT_TRUE(over_every_budget(101, {50, 100}));
  EXPECT_FALSE(over_every_budget(std::nan(""), {50}));  // not probed: fits, on no frontier
}

TEST(Judge, MemoryTradeNeedsAMemorySwitchAndAPeakBelowTheNoise) {
  const Manifest m = two_switches();
  EXPECT_TRUE(memory_trade({{"CKPT", "1"}}, m, 90, 100));
  EXPECT_FALSE(memory_trade({{"CKPT", "1"}}, m, 99, 100));  // within kNoiseThreshold
  EXPECT_FALSE(memory_trade({{"FAST", "1"}}, m, 50, 100));
  EXPECT_FALSE(memory_trade({{"CKPT", "1"}}, m, 50, 0));  // no baseline projection
}

TEST(Judge, SpeedVerdicts) {
  EXPECT_EQ(judge_speed("ok", interval(SpeedCall::faster), 0.02, 8, false, 1, true).disposition,
            Disposition::accepted);
  Judgement trade = judge_speed("ok", interval(SpeedCall::not_faster), 0.02, 8, true, 0.5, true);
  EXPECT_EQ(trade.disposition, Disposition::accepted);
  EXPECT_NE(trade.reason.find("memory trade-off: projected peak 50.0 %"), std::string::npos);
  EXPECT_EQ(judge_speed("ok", interval(SpeedCall::not_faster), 0.02, 8, false, 1, true).disposition,
            Disposition::slower);
  Judgement open = judge_speed("ok", interval(SpeedCall::undecided), 0.02, 8, false, 1, true);
  EXPECT_EQ(open.disposition, Disposition::inconclusive);
  EXPECT_NE(open.reason.find("at the cap of 8 pairs"), std::string::npos);
  EXPECT_NE(judge_speed("ok", interval(SpeedCall::faster), 0.02, 8, false, 1, false)
                .reason.find("memory not probed"),
            std::string::npos);
}

TEST(Judge, TargetProbeVerdicts) {
  EXPECT_EQ(judge_target_probe("ok", 1.10, 0.02, 32, 4).disposition, Disposition::accepted);
  EXPECT_EQ(judge_target_probe("ok", 1.01, 0.02, 32, 4).disposition, Disposition::slower);
  Judgement none = judge_target_probe("ok", std::nan(""), 0.02, 32, 4);
  EXPECT_EQ(none.disposition, Disposition::accepted);
  EXPECT_NE(none.reason.find("no speed"), std::string::npos);
}

TEST(Judge, ProjectionErrorOnlyWhereTheTargetWasMeasuredOnOneDevice) {
  ProjectionInputs in;
  in.points = {{4, 10, 0}, {32, 40, 0}};
  in.fragmentation = 2;
  in.target_micro_batch = 32;
  ASSERT_TRUE(measured_at_target(in));
  EXPECT_DOUBLE_EQ(*measured_at_target(in), 42);
  in.world_size = 8;
  EXPECT_FALSE(measured_at_target(in));
  in.world_size = 1;
  in.target_micro_batch = 64;
  EXPECT_FALSE(measured_at_target(in));
}

}  // namespace
}  // namespace sg::agent
