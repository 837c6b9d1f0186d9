// The gate's mutation suite (docs/controller.md, "Calibrating the tolerance gate"): a real
// campaign over examples/pytorch_adapter's test-only switches (SPEEDGATE_ADAPTER_MUTANTS=1)
// asserts the identity verdicts, which are deterministic at one thread: recipe changes
// declared `tolerance` by a careless author fail the rounding-calibrated gate, rounding-only
// switches and bitwise no-ops pass it. Speed verdicts are random by nature and are tested on
// replays of recorded pairs instead (tests/agent/speed_replay_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "integration/mutation_campaign.hpp"

namespace sg::test {
namespace {

namespace fs = std::filesystem;

using MutationSuite = AdapterTrainerTest;

TEST_F(MutationSuite, RecipeMutantsFailTheGateAndRoundingSwitchesPassIt) {
  MutationCampaign c;
  ASSERT_NO_FATAL_FAILURE(run_mutation_campaign(
      "SPEEDGATE_ADAPTER_MUTANTS=1", "--workload cnn --size tiny --trainer " + trainer_, dir_, &c));
  const auto verdict = [&](const std::string& key) { return c.verdict(key); };
  const auto& summary = c.summary;
  // Recipe changes whose effect at 4 or 16 steps exceeds 2x the rounding band (measured:
  // docs/controller.md): every one must fail the gate.
  ASSERT_NO_FATAL_FAILURE(expect_rounding_band_failures(
      c, {"MUT_LR_10=1", "MUT_LR_3=1", "MUT_CLIP=1", "MUT_DROP_POSITIONS=1", "MUT_WARMUP=1",
          "MUT_LABEL_SMOOTH=1"}));
  // Rounding-only switches (tolerance) and no-ops (bitwise) keep the gate's trust.
  for (const char* key : {"ROUND_BF16_AUTOCAST=1", "ROUND_EINSUM_HEAD=1", "NOOP_A=1", "NOOP_B=1",
                          "NOOP_C=1", "SKIP_REDUNDANT=1"}) {
    const auto e = verdict(key);
    ASSERT_FALSE(e.is_null()) << key << " was not evaluated";
    EXPECT_NE(e.at("disposition"), "gate_failed") << key << ": " << e.at("reason");
  }
  // A tolerance switch that passed was judged against the rounding band, says how sensitive
  // that was, and was confirmed at the horizon.
  expect_rounding_band_passes(c, {"ROUND_BF16_AUTOCAST=1", "ROUND_EINSUM_HEAD=1"});
  for (const char* key : {"NOOP_A=1", "SKIP_REDUNDANT=1"}) {
    EXPECT_EQ(verdict(key).at("gate_class"), "bitwise") << key;
  }
  // The campaign measured the host's noise and both bands.
  ASSERT_TRUE(summary.contains("host_noise")) << c.report_text.substr(0, 2000);
  EXPECT_FALSE(summary.at("host_noise").empty());
  EXPECT_EQ(summary.at("rounding_bands").size(), 2u) << "at 4 steps and at the 16-step horizon";
  // The presets README says which band gated the tolerance class.
  const auto readme = run_command("cat " + (dir_ / "presets" / "README.md").string());
  EXPECT_NE(readme.out.find("no (gated by 2x the rounding band; the seed band as outer bound)"),
            std::string::npos)
      << readme.out;
  EXPECT_NE(readme.out.find("## What each preset carries"), std::string::npos) << readme.out;
}

}  // namespace
}  // namespace sg::test
