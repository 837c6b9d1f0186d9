// The `kernels` strategy on a replayed table: a kernel trial ranks a family's variants,
// the fastest that is bitwise the plain variant is verified in training, a variant that
// fails the gate gives way to the next, and the verified one rides along in every later
// candidate that turns the family's switch on.
#include <gtest/gtest.h>

#include "agent/search/replay.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {
namespace {

using nlohmann::json;

Manifest rope_manifest() {
  json bool_switch = {{"type", "bool"},        {"values", {"0", "1"}},
                      {"default", "0"},        {"requires", json::array()},
                      {"identity", "bitwise"}, {"effect", "speed"},
                      {"available", true}};
  json fused = bool_switch, other = bool_switch;
  fused["name"] = "FUSED_ROPE";
  fused["env"] = "SG_FUSED_ROPE";
  other["name"] = "OTHER";
  other["env"] = "SG_OTHER";
  return parse_manifest(
      json{{"protocol", 1},
           {"trainer", "recorded"},
           {"version", "0"},
           {"build", json::object()},
           {"workloads",
            {{{"name", "wam"}, {"sizes", {{{"name", "tiny"}, {"default_micro_batch", 2}}}}}}},
           {"switches", {fused, other}},
           {"kernel_families",
            {{{"name", "ROPE"},
              {"env", "SG_KERNEL_ROPE"},
              {"switch", "FUSED_ROPE"},
              {"parameters", {{{"name", "threads"}, {"values", {"64", "128", "256"}}}}},
              {"constraints", json::array()},
              {"available", true},
              {"kernel_trial", true}}}}});
}

json entry(const json& config, const char* disposition, double speedup = 1.05) {
  return {{"config", config}, {"steps", 4}, {"disposition", disposition}, {"speedup", speedup}};
}

// Timings: threads=128 fastest, threads=256 second, threads=64 slowest.
json timings(bool fastest_matches_plain = true) {
  return {
      {"ROPE",
       {{{"params", "plain"}, {"fwdbwd_us", 100.0}},
        {{"params", "threads=64"}, {"fwdbwd_us", 30.0}},
        {{"params", "threads=128"}, {"fwdbwd_us", 10.0}, {"matches_plain", fastest_matches_plain}},
        {{"params", "threads=256"}, {"fwdbwd_us", 20.0}}}}};
}

SearchOptions options() {
  SearchOptions o;
  o.screen_steps = 1;
  o.full_steps = 4;
  return o;
}

std::vector<std::string> keys(const ReplayEvaluator& r) {
  std::vector<std::string> out;
  for (const auto& [k, steps] : r.calls()) out.push_back(k);
  return out;
}

// Strategy `kernels` over rope_manifest(), replaying `entries` and, unless null, the
// kernel trial's `kernel_timings`.
struct KernelsRun {
  std::vector<std::string> keys;  // the evaluations it asked for, in order
  decltype(SearchContext::kernel_choice) choice;
};
KernelsRun run_kernels(const json& entries, const json& kernel_timings = nullptr) {
  const Manifest m = rope_manifest();
  json table{{"entries", entries}};
  if (!kernel_timings.is_null()) table["kernel_timings"] = kernel_timings;
  ReplayEvaluator replay(table);
  SearchContext ctx(m, replay, options());
  ctx.run_strategy("kernels");
  return {keys(replay), ctx.kernel_choice};
}

TEST(KernelSearch, TimesEveryVariantThenVerifiesTheFastestInTraining) {
  const auto run = run_kernels(
      json::array({entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=128"}}, "accepted")}),
      timings());
  EXPECT_EQ(run.keys, (std::vector<std::string>{"kernel-trial ROPE",
                                                "FUSED_ROPE=1,KERNEL_ROPE=threads=128"}));
  EXPECT_EQ(run.choice.at("KERNEL_ROPE"), "threads=128");
}

TEST(KernelSearch, AVariantThatFailsTheGateGivesWayToTheNextFastest) {
  const auto run = run_kernels(
      json::array({entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=128"}}, "gate_failed"),
                   entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=256"}}, "slower", 0.99)}),
      timings());
  EXPECT_EQ(run.keys,
            (std::vector<std::string>{"kernel-trial ROPE", "FUSED_ROPE=1,KERNEL_ROPE=threads=128",
                                      "FUSED_ROPE=1,KERNEL_ROPE=threads=256"}));
  // "slower" passed the gate: the variant is verified, whether or not the switch pays.
  EXPECT_EQ(run.choice.at("KERNEL_ROPE"), "threads=256");
}

TEST(KernelSearch, AVariantNotBitwiseInTheKernelTrialIsNeverTried) {
  const auto run = run_kernels(
      json::array({entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=256"}}, "accepted")}),
      timings(/*fastest_matches_plain=*/false));
  EXPECT_EQ(run.keys, (std::vector<std::string>{"kernel-trial ROPE",
                                                "FUSED_ROPE=1,KERNEL_ROPE=threads=256"}));
  EXPECT_EQ(run.choice.at("KERNEL_ROPE"), "threads=256");
}

TEST(KernelSearch, NoVerifiedVariantLeavesTheFamilyAtItsDefault) {
  const auto run = run_kernels(json::array(), timings());  // every evaluation crashes
  EXPECT_EQ(run.keys.size(), 4u);  // the trial, then the three fastest variants
  EXPECT_TRUE(run.choice.empty());
}

TEST(KernelSearch, NoKernelTrialResultMeansNoTrainingTrials) {
  const auto run = run_kernels(json::array());
  EXPECT_EQ(run.keys, (std::vector<std::string>{"kernel-trial ROPE"}));
  EXPECT_TRUE(run.choice.empty());
}

// With a variant chosen, the minifier still isolates a culprit from a failing set that
// holds the fused switch: the switch and its variant go together, so neither is put back.
TEST(KernelSearch, MinifyIsolatesTheCulpritWhenAVariantRidesAlong) {
  const Manifest m = rope_manifest();
  ReplayEvaluator replay(json{
      {"entries",
       {entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=256"}, {"OTHER", "1"}}, "gate_failed"),
        entry({{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=256"}}, "accepted"),
        entry({{"OTHER", "1"}}, "gate_failed")}}});
  SearchContext ctx(m, replay, options());
  ctx.kernel_choice["KERNEL_ROPE"] = "threads=256";
  ctx.pending_minify.push_back(
      {{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=256"}, {"OTHER", "1"}});
  ctx.run_strategy("minify");
  ASSERT_EQ(ctx.conflicts.size(), 1u);
  EXPECT_EQ(config_key(ctx.conflicts[0]), "OTHER=1");
}

TEST(KernelSearch, TheChoiceRidesAlongWhereverTheSwitchIsOn) {
  const Manifest m = rope_manifest();
  ReplayEvaluator replay(json{{"entries", json::array()}});
  SearchContext ctx(m, replay, options());
  ctx.kernel_choice["KERNEL_ROPE"] = "threads=256";
  EXPECT_EQ(config_key(*ctx.make_candidate({{"FUSED_ROPE", "1"}, {"OTHER", "1"}})),
            "FUSED_ROPE=1,KERNEL_ROPE=threads=256,OTHER=1");
  EXPECT_EQ(config_key(*ctx.make_candidate({{"OTHER", "1"}})), "OTHER=1");
  // An explicit variant is kept.
  EXPECT_EQ(config_key(*ctx.make_candidate({{"KERNEL_ROPE", "threads=64"}})),
            "FUSED_ROPE=1,KERNEL_ROPE=threads=64");
}

}  // namespace
}  // namespace sg::agent
