// End-to-end against the real speedgate-train on wam/tiny (CPU). Skipped when the
// trainer was not built (SPEEDGATE_BUILD_TRAINER=OFF); SPEEDGATE_TEST_TRAINER may
// point at another build of it.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "agent/gate/gate.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/runner/describe.hpp"
#include "agent/runner/trial.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

TEST(RealTrainer, TinyCampaignEmitsPresets) {
  if (!fs::exists(test::real_trainer())) GTEST_SKIP() << test::real_trainer() << " not built";
  std::string dir = test::make_temp_dir("real");
  auto r = test::run_speedgate(test::real_screen_args("wam", test::real_trainer(), 1, 8), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["campaign"]["deterministic"], true)
      << "CPU, 2 threads: the baseline must repeat bitwise";
  EXPECT_EQ(j["trials"]["total"], 8);
  ASSERT_TRUE(j["baseline"].is_object());
  EXPECT_EQ(j["baseline"]["disposition"], "accepted");
  EXPECT_GT(j["baseline"]["projected_peak_bytes"].get<double>(), 0);
  for (const char* f : {"presets/fast.env", "presets/fast_80gb.env", "presets/README.md"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  Manifest m = describe_trainer(test::real_trainer());
  PresetParse p = parse_preset(read_file(dir + "/presets/fast.env").value(), m);
  EXPECT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors.front());
  r = test::run_speedgate(
      {"presets", "check", "presets/fast.env", "--trainer", test::real_trainer()}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  {
    Store s(dir + "/results/sg.db", /*read_only=*/true);
    SQLite::Statement q(raw_db(s),
                        "SELECT COUNT(*) FROM projections WHERE measured_bytes IS NOT NULL");
    q.executeStep();
    EXPECT_GT(q.getColumn(0).getInt(), 0)
        << "target micro-batch 2 was measured: its error is stored";
  }
  fs::remove_all(dir);
}

TEST(RealTrainer, GradientAccumulationSumBugFailsTheGate) {
  if (!fs::exists(test::real_trainer())) GTEST_SKIP() << test::real_trainer() << " not built";
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("realgas");
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
  fs::remove_all(dir);
}

TEST(RealTrainer, InjectedOomAndNanEndAsTheirDispositions) {
  if (!fs::exists(test::real_trainer())) GTEST_SKIP() << test::real_trainer() << " not built";
  std::string dir = test::make_temp_dir("realfaults");
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
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
