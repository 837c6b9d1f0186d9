// Results that lie or attack the parser (docs/reliability.md, "A result that lies" and
// "Bounded parsing"): the fake trainer reports fields other than those launched,
// implausible or non-finite numbers, or documents beyond the caps. Each trial ends as
// invalid_result (nan for non-finite values) with a reason naming the field; none is
// believed, none crashes the controller.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/protocol/result.hpp"
#include "agent/runner/trial.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

struct ResultCheck : test::TempDirTest {
  TrialOutcome run(const std::string& fault, const std::string& patch = "{}") {
    test::ScopedEnv f("FAKE_FAULT", fault);
    test::ScopedEnv p("FAKE_RESULT_PATCH", patch);
    test::ScopedEnv m("FAKE_MANIFEST", "full");
    TrialRequest r = test::fake_trial_request(dir + "/t");
    r.switch_env = {{"SG_TEXT_CACHE", "1"}};
    return run_trial(r);
  }
};

TEST_F(ResultCheck, AnHonestResultIsBelievedAndStoredAsItsValidatedFields) {
  TrialOutcome o = run("", R"({"extra": {"note": "for people only"}})");
  ASSERT_FALSE(o.failure) << o.reason;
  ASSERT_TRUE(o.result);
  EXPECT_FALSE(o.result->raw.contains("extra")) << "only the validated fields are kept";
  EXPECT_TRUE(parse_result_text(o.result->raw.dump()).result) << "the kept fields parse back";
}

TEST_F(ResultCheck, EveryLaunchedFieldThatComesBackChangedIsInvalidNamingIt) {
  struct Case {
    std::string patch, reason;
  };
  const std::vector<Case> cases = {
      {R"({"seed": 1})", "result field seed is 1, the trial launched seed 0"},
      {R"({"workload": "lm"})", "result field workload is 'lm', the trial launched workload 'wam'"},
      {R"({"size": "small"})", "result field size is 'small'"},
      {R"({"micro_batch": 3})", "result field micro_batch is 3, the trial launched micro_batch 2"},
      {R"({"grad_accum": 2})", "result field grad_accum is 2"},
      {R"({"world_size": 4})", "result field world_size is 4"},
      {R"({"fingerprint.threads": 64})", "result field fingerprint.threads is 64"},
      {R"({"switches.SG_TEXT_CACHE": "0"})",
       "result field switches.SG_TEXT_CACHE is '0', the trial launched '1'"},
      {R"({"switches": {}})", "result field switches lacks SG_TEXT_CACHE"},
      {R"({"step_records.1.step": 5})", "step_records[1].step is 5"},
      {R"({"samples_per_s": 1.7e308})", "samples_per_s"},
      {R"({"samples_per_s": 1e-9})", "longer than the process ran"},
      {R"({"tokens_per_s": -1})", "tokens_per_s"},
      {R"({"memory.peak_allocated_bytes": [-1e18]})", "'peak_allocated_bytes' is -1e+18"},
      {R"({"memory.peak_reserved_bytes": [1e300]})", "peak_reserved_bytes"},
      {R"({"fingerprint.device_memory_bytes": 1024})", "peak_allocated_bytes"},
      {R"({"memory.breakdown.activations": -5})", "activations"},
      {R"({"step_records.0.seconds": 1e6})", "longer than the process ran"},
      {R"({"workload": null})",
       "missing field 'workload' (required by schemas/result.schema.json)"},
      {R"({"switches": null})", "missing field 'switches'"},
  };
  for (const auto& c : cases) {
    TrialOutcome o = run("", c.patch);
    ASSERT_TRUE(o.failure) << c.patch << " was believed";
    EXPECT_EQ(*o.failure, Disposition::invalid_result) << c.patch << ": " << o.reason;
    EXPECT_NE(o.reason.find(c.reason), std::string::npos) << c.patch << ": " << o.reason;
    EXPECT_FALSE(o.result) << c.patch;
  }
}

TEST_F(ResultCheck, ALyingSeedIsInvalid) {
  TrialOutcome o = run("lie_seed");
  EXPECT_EQ(o.failure, Disposition::invalid_result) << o.reason;
  EXPECT_NE(o.reason.find("seed is 1, the trial launched seed 0"), std::string::npos) << o.reason;
}

TEST_F(ResultCheck, NonFiniteLossWithStatusOkIsNanNeverAccepted) {
  TrialOutcome o = run("nan_ok");
  EXPECT_EQ(o.failure, Disposition::nan) << o.reason;
  EXPECT_NE(o.reason.find("step 2 loss is non-finite (bits 7fc00000)"), std::string::npos)
      << o.reason;
  o = run("", R"({"step_records.0.grad_norm_bits": "7f800000"})");
  EXPECT_EQ(o.failure, Disposition::nan) << o.reason;
  EXPECT_NE(o.reason.find("grad norm is non-finite"), std::string::npos) << o.reason;
  o = run("", R"({"eval_loss_bits": "ff800000"})");
  EXPECT_EQ(o.failure, Disposition::nan) << o.reason;
}

TEST_F(ResultCheck, DocumentsBeyondTheCapsAreInvalidNotACrash) {
  TrialOutcome o = run("deep");
  EXPECT_EQ(o.failure, Disposition::invalid_result) << o.reason;
  EXPECT_NE(o.reason.find("nested deeper than 64 levels"), std::string::npos) << o.reason;
  o = run("huge");
  EXPECT_EQ(o.failure, Disposition::invalid_result) << o.reason;
  EXPECT_NE(o.reason.find("larger than 16777216 bytes"), std::string::npos) << o.reason;
  o = run("long_string");
  EXPECT_EQ(o.failure, Disposition::invalid_result) << o.reason;
  EXPECT_NE(o.reason.find("string longer than 65536 bytes"), std::string::npos) << o.reason;
}

TEST_F(ResultCheck, AHostileHeartbeatIsIgnoredNotParsed) {
  test::ScopedEnv f("FAKE_FAULT", "deep_heartbeat");
  test::ScopedEnv slow("FAKE_STEP_SLEEP", "1.5");  // long enough for the runner to look
  TrialRequest r = test::fake_trial_request(dir + "/hb");
  r.steps = 2;
  std::vector<std::string> beats;
  r.on_heartbeat = [&](const std::string& hb) { beats.push_back(hb); };
  TrialOutcome o = run_trial(r);
  EXPECT_FALSE(o.failure) << o.reason;
  EXPECT_FALSE(beats.empty());
  for (const auto& b : beats)
    EXPECT_TRUE(b.empty()) << "a heartbeat beyond its caps reached the controller";
}

// Issue 31's report: TEXT_CACHE=1 reporting seed 1 for seed 0 reached the emitted
// preset; a status-ok NaN made the band infinite. Inside a campaign neither is believed.
TEST(ResultCheckCampaign, LyingAndNonFiniteResultsNeverReachAPreset) {
  const std::string dir = test::make_temp_dir("liecampaign");
  std::vector<std::string> args = test::fake_tune_args();
  args.insert(args.end(), {"--presets-out", "presets"});
  auto r = test::run_speedgate(
      args, dir,
      {{"FAKE_MANIFEST", "full"}, {"FAKE_FAULT_IF", "TEXT_CACHE=1:lie_seed,SLOWER=1:nan_ok"}});
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  Store s(dir + "/sg.db", /*read_only=*/true);
  auto campaign = s.latest_campaign(false);
  ASSERT_TRUE(campaign);
  int lies = 0, nans = 0;
  for (const auto& t : s.trials(campaign->id)) {
    if (t.config_key == "TEXT_CACHE=1") {
      ++lies;
      ASSERT_TRUE(t.disposition) << t.trial_key;
      EXPECT_EQ(*t.disposition, Disposition::invalid_result) << t.reason;
      EXPECT_NE(t.reason.find("result field seed is"), std::string::npos) << t.reason;
    }
    if (t.config_key == "SLOWER=1") {
      ++nans;
      ASSERT_TRUE(t.disposition) << t.trial_key;
      EXPECT_EQ(*t.disposition, Disposition::nan) << t.reason;
    }
  }
  EXPECT_GE(lies, 1);
  EXPECT_GE(nans, 1);
  for (const auto& e : s.evaluations(campaign->id)) {
    if (e.config_key == "TEXT_CACHE=1" || e.config_key == "SLOWER=1") {
      EXPECT_NE(e.disposition, Disposition::accepted) << e.config_key;
    }
  }
  const std::string preset = read_file(dir + "/presets/fast.env").value_or("");
  EXPECT_EQ(preset.find("SG_TEXT_CACHE=1\n"), std::string::npos) << preset;
  EXPECT_EQ(preset.find("SG_SLOWER=1\n"), std::string::npos) << preset;
  fs::remove_all(dir);
}

TEST(ResultParse, ADeeplyNestedTextIsRefusedByThePreScan) {
  const std::string deep =
      "{\"protocol\": 1, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  ResultParse p = parse_result_text(deep);
  EXPECT_FALSE(p.result);
  EXPECT_NE(p.error.find("nested deeper than 64 levels"), std::string::npos) << p.error;
}

}  // namespace
}  // namespace sg::agent
