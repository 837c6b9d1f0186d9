// The gate's mutation suite on speedgate-train (docs/controller.md, "Calibrating the
// tolerance gate"): a real campaign on wam tiny over the trainer's test-only switches
// (SPEEDGATE_TEST_MUTANTS, docs/protocol.md section 4) asserts the identity verdicts, which
// are deterministic at one thread: recipe changes declared `tolerance` whose measured effect
// is clearly above the rounding band fail the gate; rounding-only switches and bitwise
// no-ops pass it. Speed is not asserted (tests/agent/speed_replay_test.cpp replays pairs).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "integration/mutation_campaign.hpp"

namespace sg::test {
namespace {

namespace fs = std::filesystem;

std::set<std::string> manifest_switches(const std::string& env) {
  const auto r = run_command(env + " " + bin("speedgate-train") + " describe --json 2>&1");
  std::set<std::string> names;
  if (r.exit_code != 0)
    return {"exit " + std::to_string(r.exit_code) + ": " + r.out.substr(0, 200)};
  const auto manifest = nlohmann::json::parse(r.out);  // alive through the loop
  for (const auto& s : manifest.at("switches")) names.insert(s.at("name").get<std::string>());
  return names;
}

TEST(TrainerMutants, OnlyTheTestVariableListsThemAndAUserCannotSetThem) {
  if (!fs::exists(bin("speedgate-train")))
    GTEST_SKIP() << "speedgate-train not built (agent-only build)";
  const auto plain = manifest_switches("");
  EXPECT_EQ(plain.count("NOOP_A"), 0u);
  EXPECT_EQ(plain.count("MUT_LR_10"), 0u);
  EXPECT_EQ(plain.count("TEXT_CACHE"), 1u);
  const auto added = manifest_switches("SPEEDGATE_TEST_MUTANTS=1");
  EXPECT_EQ(added.count("MUT_LR_10"), 1u);
  EXPECT_EQ(added.count("TEXT_CACHE"), 1u);
  const auto only = manifest_switches("SPEEDGATE_TEST_MUTANTS=only");
  EXPECT_EQ(only.count("MUT_LR_10"), 1u);
  EXPECT_EQ(only.count("TEXT_CACHE"), 0u);
  EXPECT_EQ(only.size() + plain.size(), added.size());
  // Without the variable a mutant is an unknown switch; a misspelt variable is bad input.
  const std::string run =
      bin("speedgate-train") + " run --workload wam --size tiny --steps 1 --result /dev/null";
  EXPECT_EQ(run_command("SG_NOOP_A=1 " + run + " 2>&1").exit_code, 2);
  EXPECT_EQ(run_command("SPEEDGATE_TEST_MUTANTS=yes " + run + " 2>&1").exit_code, 2);
}

TEST(TrainerMutants, RecipeMutantsFailTheGateAndRoundingSwitchesPassIt) {
  if (!fs::exists(bin("speedgate-train")))
    GTEST_SKIP() << "speedgate-train not built (agent-only build)";
  const fs::path dir = fresh_temp_dir("sg-trainer-mutants-");
  // The mutants alone (=only).
  MutationCampaign c;
  ASSERT_NO_FATAL_FAILURE(
      run_mutation_campaign("SPEEDGATE_TEST_MUTANTS=only", "--workload wam --size tiny", dir, &c));
  const auto verdict = [&](const std::string& key) { return c.verdict(key); };
  const auto& summary = c.summary;
  // Recipe changes measured clearly above 2x the rounding band at 4 or 16 steps
  // (docs/controller.md): every one must fail the gate.
  ASSERT_NO_FATAL_FAILURE(expect_rounding_band_failures(
      c, {"MUT_LR_3=1", "MUT_LR_10=1", "MUT_WARMUP=1", "MUT_DROP_POSITIONS=1"}));
  // Rounding-only switches (tolerance) and no-ops (bitwise) keep the gate's trust.
  for (const char* key : {"ROUND_BF16_OUTPUT=1", "ROUND_BF16_LINEAR=1", "ROUND_F64_LINEAR=1",
                          "ROUND_BF16_GRADS=1", "NOOP_A=1", "NOOP_B=1"}) {
    const auto e = verdict(key);
    ASSERT_FALSE(e.is_null()) << key << " was not evaluated";
    const std::string d = e.at("disposition");
    EXPECT_TRUE(d == "accepted" || d == "slower" || d == "inconclusive")
        << key << ": " << d << ": " << e.at("reason");
  }
  // A tolerance switch that passed was judged against the rounding band, says how
  // sensitive that was, and was confirmed at the horizon.
  expect_rounding_band_passes(c, {"ROUND_BF16_OUTPUT=1", "ROUND_BF16_LINEAR=1",
                                  "ROUND_F64_LINEAR=1", "ROUND_BF16_GRADS=1"});
  for (const char* key : {"NOOP_A=1", "NOOP_B=1"})
    EXPECT_EQ(verdict(key).at("gate_class"), "bitwise") << key;
  EXPECT_EQ(summary.at("rounding_bands").size(), 2u) << "at 4 steps and at the 16-step horizon";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::test
