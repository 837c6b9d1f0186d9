// End-to-end against the real speedgate-train on wam/tiny and lm/tiny (CPU). Skipped when
// the trainer was not built (SPEEDGATE_BUILD_TRAINER=OFF); SPEEDGATE_TEST_TRAINER may
// point at another build of it.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "agent/gate/gate.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/protocol/config.hpp"
#include "agent/runner/describe.hpp"
#include "agent/runner/trial.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

using RealTrainer = test::RealTrainerTest;
using RealTrainerLm = test::RealTrainerTest;

TEST_F(RealTrainer, TinyCampaignEmitsPresets) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(test::run_real_screen(dir, "wam", 1, 8, &j));
  EXPECT_EQ(j["trials"]["total"], 8);
  EXPECT_GT(j["baseline"]["projected_peak_bytes"].get<double>(), 0);
  for (const char* f : {"presets/fast.env", "presets/fast_80gb.env", "presets/README.md"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  Manifest m = describe_trainer(test::real_trainer());
  PresetParse p = parse_preset(read_file(dir + "/presets/fast.env").value(), m);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors.front());
  auto r = test::run_speedgate(
      {"presets", "check", "presets/fast.env", "--trainer", test::real_trainer()}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  Store s(dir + "/results/sg.db", /*read_only=*/true);
  SQLite::Statement q(raw_db(s),
                      "SELECT COUNT(*) FROM projections WHERE measured_bytes IS NOT NULL");
  q.executeStep();
  EXPECT_GT(q.getColumn(0).getInt(), 0) << "target micro-batch 2 was measured: its error is stored";
}

// The lm workload: only switches that apply to lm are tried, and presets are emitted.
TEST_F(RealTrainerLm, TinyCampaignSearchesOnlyLmSwitches) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(test::run_real_screen(dir, "lm", 2, 8, &j));
  EXPECT_TRUE(fs::exists(dir + "/presets/fast.env"));
  const Manifest m = describe_trainer(test::real_trainer());
  Store s(dir + "/results/sg.db", /*read_only=*/true);
  auto camp = s.latest_campaign(/*unfinished_only=*/false, "lm", "tiny");
  ASSERT_TRUE(camp.has_value());
  int tried = 0;
  SQLite::Statement q(raw_db(s), "SELECT DISTINCT config_key FROM trials WHERE campaign_id = ?");
  q.bind(1, camp->id);
  while (q.executeStep()) {
    for (const auto& [name, value] : config_from_key(q.getColumn(0).getString())) {
      const SwitchSpec* spec = m.find_switch(name);
      ASSERT_NE(spec, nullptr) << name;
      EXPECT_TRUE(spec->applies_to("lm")) << name << " is not an lm switch";
      ++tried;
    }
  }
  EXPECT_GT(tried, 0)
      << "the screen tried no switch (CPU: PAD_TO_8 and CKPT_LAYERS are the lm candidates)";
}

TEST_F(RealTrainer, GradientAccumulationSumBugFailsTheGate) {
  spdlog::set_level(spdlog::level::warn);
  auto run = [&](int seed, const char* fault) {
    test::ScopedEnv f("SPEEDGATE_TEST_FAULT", fault);
    TrialRequest t = test::real_trial_request(dir + "/" + std::to_string(seed) + fault, 1);
    t.seed = seed;
    t.grad_accum = 4;
    TrialOutcome o = run_trial(t);
    EXPECT_FALSE(o.failure) << o.reason;
    return o.result.value_or(TrialResult{});
  };
  TrialResult s0 = run(0, ""), s1 = run(1000, ""), bug = run(0, "grad_accum_sum");
  ASSERT_FALSE(s0.step_records.empty());
  Band band = compute_band(s0, {s1});
  Verdict v = within_band(bug, s0, band);
  EXPECT_FALSE(v.pass) << v.reason;
  EXPECT_FALSE(bitwise_equal(bug, s0).pass);
}

TEST_F(RealTrainer, InjectedOomAndNanEndAsTheirDispositions) {
  for (auto [fault, want] :
       {std::pair{"oom", Disposition::oom}, std::pair{"nan", Disposition::nan}}) {
    test::ScopedEnv f("SPEEDGATE_TEST_FAULT", fault);
    TrialRequest t = test::real_trial_request(dir + "/" + fault, 3);
    TrialOutcome o = run_trial(t);
    ASSERT_TRUE(o.failure) << fault;
    EXPECT_EQ(*o.failure, want) << fault << ": " << o.reason;
    EXPECT_TRUE(fs::exists(o.stderr_log)) << fault;
    EXPECT_FALSE(o.result) << "a failed run never carries a result the gate could use";
  }
}

}  // namespace
}  // namespace sg::agent
