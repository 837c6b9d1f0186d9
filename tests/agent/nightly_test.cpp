// speedgate nightly against the fake trainer (tests/agent/data/fake_trainer_nightly.py,
// fake_trainer.py plus FAKE_SPEED / FAKE_DRIVER knobs): regressions demote presets and
// fail the run, a fingerprint change starts a new baseline, the budget stops the night
// within one trainer run, earlier nights warm-start later ones, and two nights give the
// dashboard's trend two points. No timing thresholds: budgets are counted in trainer
// runs, or are smaller than one run's guaranteed minimum length.
#include "agent/nightly/nightly.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "agent/common/files.hpp"
#include "agent/nightly/current_presets.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/store.hpp"
#include "campaign_support.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent::nightly {
namespace {

std::string nightly_trainer() {
  return std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/fake_trainer_nightly.py";
}

class NightlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spdlog::set_level(spdlog::level::warn);
    dir_ = test::make_temp_dir("nightly");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  NightlyOptions options() const {
    NightlyOptions o;
    o.campaign = test::fake_options(dir_);
    CampaignOptions& c = o.campaign;
    c.trainer = nightly_trainer();
    c.trial.steps = 4;
    c.trial.screen_steps = 2;
    c.trial.seeds = CampaignOptions().trial.seeds;  // the default three
    c.search.plan = {"screen", "halving", "greedy"};
    c.budget.minutes = 60;  // never reached here: the plan ends first
    o.presets_dir = dir_ + "/presets";
    return o;
  }

  NightlyReport night(const NightlyOptions& o) {
    Manifest m = describe_trainer(o.campaign.trainer);
    return run_nightly(o, m);
  }

  std::vector<std::string> cli_args(double budget_minutes) const {
    return {"nightly",
            "--db",
            dir_ + "/sg.db",
            "--budget-minutes",
            std::to_string(budget_minutes),
            "--trainer",
            nightly_trainer(),
            "--workload",
            "wam",
            "--size",
            "tiny",
            "--steps",
            "4",
            "--screen-steps",
            "2",
            "--repeats",
            "2",
            "--max-repeats",
            "2",
            "--noise-pairs",
            "0",
            "--target-micro-batch",
            "32",
            "--plan",
            "screen,halving,greedy",
            "--presets-dir",
            dir_ + "/presets",
            "--memory-budget",
            "fast=141GiB",
            "--memory-budget",
            "fast_80gb=80GiB",
            "--threads",
            "2"};  // as options(): a resumed night has the same options
  }

  int count(Store& s, const std::string& sql, std::int64_t campaign_id) {
    SQLite::Statement q(raw_db(s), sql);
    q.bind(1, campaign_id);
    q.executeStep();
    return q.getColumn(0).getInt();
  }

  std::string dir_;
  test::ScopedEnv small_{"FAKE_MANIFEST", "small"};
};

TEST(NightlyPresets, ClaimedSpeedupIsReadFromTheProvenanceComment) {
  EXPECT_EQ(
      claimed_speedup("# campaign: 3\n# speedup: 1.430x +- 0.010 (median ...)\nSG_TEXT_CACHE=1\n"),
      1.43);
  EXPECT_FALSE(claimed_speedup("SG_TEXT_CACHE=1\n").has_value());
  EXPECT_FALSE(claimed_speedup("# speedup: nonsense\n").has_value());
}

TEST_F(NightlyTest, FirstNightEmitsPresetsAndKeepsThemTheSecondNight) {
  NightlyReport first = night(options());
  EXPECT_EQ(first.exit_code(), 0) << first.to_json().dump(2);
  EXPECT_TRUE(first.checks.empty());
  ASSERT_EQ(first.written.size(), 2u);
  auto fast = read_file(dir_ + "/presets/fast.env");
  ASSERT_TRUE(fast);
  EXPECT_NE(fast->find("SG_TEXT_CACHE=1"), std::string::npos) << *fast;
  EXPECT_TRUE(claimed_speedup(*fast).has_value());

  NightlyReport second = night(options());
  EXPECT_EQ(second.exit_code(), 0) << second.to_json().dump(2);
  ASSERT_EQ(second.checks.size(), 2u);
  for (const auto& c : second.checks) EXPECT_EQ(c.verdict, "kept") << c.name << ": " << c.reason;
  EXPECT_TRUE(second.written.empty()) << "nothing beats the presets beyond the noise threshold";
  EXPECT_EQ(read_file(dir_ + "/presets/fast.env"), fast);
}

TEST_F(NightlyTest, SlowerPresetIsDemotedAndExitCodeIsOne) {
  ASSERT_EQ(night(options()).exit_code(), 0);
  const auto fast_before = read_file(dir_ + "/presets/fast.env");
  ASSERT_TRUE(fast_before);

  // The text cache stopped helping: fast.env (TEXT_CACHE + FAST_MISS) got slower.
  test::CliRun r = test::run_speedgate(
      cli_args(60), dir_, {{"FAKE_MANIFEST", "small"}, {"FAKE_SPEED", "TEXT_CACHE=1:1.0"}});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("preset fast: DEMOTED"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(dir_ + "/presets/fast.env"), fast_before)
      << "a demoted .env is not overwritten";
  auto readme = read_file(dir_ + "/presets/README.md");
  ASSERT_TRUE(readme);
  EXPECT_NE(readme->find("**DEMOTED** `" + dir_ + "/presets/fast.env`"), std::string::npos)
      << *readme;
  EXPECT_NE(readme->find("regression limit"), std::string::npos) << *readme;

  Store s(dir_ + "/sg.db");
  SQLite::Statement v(raw_db(s),
                      "SELECT name, verdict, recorded_speedup, measured_speedup FROM "
                      "preset_verifications ORDER BY name");
  std::map<std::string, std::string> verdicts;
  while (v.executeStep()) {
    verdicts[v.getColumn(0).getString()] = v.getColumn(1).getString();
    if (v.getColumn(0).getString() == "fast")
      EXPECT_LT(v.getColumn(3).getDouble(), 0.95 * v.getColumn(2).getDouble());
  }
  EXPECT_EQ(verdicts["fast"], "demoted");
  SQLite::Statement d(raw_db(s),
                      "SELECT COUNT(*) FROM presets WHERE name = 'fast' AND demoted_at IS NOT NULL "
                      "AND campaign_id = 1");
  d.executeStep();
  EXPECT_EQ(d.getColumn(0).getInt(), 1) << "the recorded preset row is marked demoted";
  SQLite::Statement n(raw_db(s), "SELECT exit_code FROM nightly_runs WHERE campaign_id = 2");
  ASSERT_TRUE(n.executeStep());
  EXPECT_EQ(n.getColumn(0).getInt(), 1);
  // The trend keeps the bad night as a marked point.
  const nlohmann::json fast = dashboard::preset_series(s).at("fast");
  ASSERT_EQ(fast.size(), 2u) << fast.dump();
  EXPECT_FALSE(fast[0].at("demoted").get<bool>());
  EXPECT_TRUE(fast[1].at("demoted").get<bool>());
}

TEST_F(NightlyTest, FingerprintChangeStartsNewBaseline) {
  NightlyReport first = night(options());
  ASSERT_EQ(first.exit_code(), 0);
  NightlyReport second;
  {
    test::ScopedEnv driver("FAKE_DRIVER", "999.1");
    second = night(options());
  }
  EXPECT_TRUE(second.environment_changed);
  EXPECT_EQ(second.previous_campaign_id, first.campaign_id);
  ASSERT_TRUE(second.environment_diff.contains("driver")) << second.environment_diff.dump();
  EXPECT_EQ(second.environment_diff["driver"][1], "999.1");
  EXPECT_EQ(second.trials_reused, 0) << "results of another environment are never reused";

  Store s(dir_ + "/sg.db");
  auto c1 = s.campaign(first.campaign_id), c2 = s.campaign(second.campaign_id);
  ASSERT_TRUE(c1 && c2 && c1->environment_id && c2->environment_id);
  EXPECT_NE(*c1->environment_id, *c2->environment_id);
  EXPECT_GE(count(s,
                  "SELECT COUNT(*) FROM baselines b JOIN trials t ON t.id = b.trial_id "
                  "WHERE b.campaign_id = ? AND t.reused_from IS NULL AND t.run_ok = 1",
                  second.campaign_id),
            4)
      << "a fresh preflight pair and seed band";
  EXPECT_EQ(count(s, "SELECT environment_changed FROM nightly_runs WHERE campaign_id = ?",
                  second.campaign_id),
            1);
  auto readme = read_file(dir_ + "/presets/README.md");
  ASSERT_TRUE(readme);
  EXPECT_NE(readme->find("environment CHANGED"), std::string::npos) << *readme;

  // Back on the first environment: nothing changed relative to the night before? It did
  // (999.1 -> ""), and results of the first night's environment may be reused again.
  NightlyReport third = night(options());
  EXPECT_TRUE(third.environment_changed);
  EXPECT_GT(third.trials_reused, 0);
}

TEST_F(NightlyTest, BudgetRespectedWithinOneTrial) {
  NightlyOptions o = options();
  o.campaign.budget.minutes = 0;
  o.campaign.budget.trials = 7;  // the baseline takes 5 runs (preflight x2, band x2, memory probe)
  NightlyReport r = night(o);
  EXPECT_TRUE(r.budget_spent);
  EXPECT_EQ(r.trials_run, 7);
  Store s(dir_ + "/sg.db");
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND reused_from IS NULL",
                  r.campaign_id),
            7);
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND state != 'finished'",
                  r.campaign_id),
            0)
      << "the run in flight finished and was recorded";
  EXPECT_EQ(s.campaign(r.campaign_id)->state, "finished");

  // Wall-clock budget shorter than one trainer run (each sleeps >= 4 x 0.1 s): exactly
  // one run starts, finishes and is recorded; the night fails loudly.
  std::filesystem::remove_all(dir_ + "/presets");
  test::CliRun cli = test::run_speedgate(cli_args(0.001), dir_,
                                         {{"FAKE_MANIFEST", "small"}, {"FAKE_STEP_SLEEP", "0.1"}});
  EXPECT_EQ(cli.code, 1) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("budget"), std::string::npos) << cli.out;
  auto latest = s.latest_campaign(false);
  ASSERT_TRUE(latest);
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM trials WHERE campaign_id = ?", latest->id), 1);
  EXPECT_EQ(
      count(
          s,
          "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND state = 'finished' AND run_ok = 1",
          latest->id),
      1);
}

// Running trials (state 'running') and finished ones of the newest campaign; {-1, -1}
// while the DB does not exist yet.
std::pair<int, int> running_and_finished(const std::string& db) {
  try {
    SQLite::Database d(db, SQLite::OPEN_READONLY);
    SQLite::Statement q(d,
                        "SELECT SUM(state = 'running'), SUM(state = 'finished') FROM trials "
                        "WHERE campaign_id = (SELECT MAX(id) FROM campaigns)");
    if (!q.executeStep() || q.getColumn(0).isNull()) return {0, 0};
    return {q.getColumn(0).getInt(), q.getColumn(1).getInt()};
  } catch (const std::exception&) {
    return {-1, -1};
  }
}

TEST_F(NightlyTest, KilledNightIsResumedByARerun) {
  const std::vector<std::string> args = cli_args(60);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("FAKE_STEP_SLEEP", "0.2", 1);
    if (::chdir(dir_.c_str()) != 0) ::_exit(127);
    if (!std::freopen("killed.out", "w", stdout) || !std::freopen("killed.err", "w", stderr))
      ::_exit(127);
    std::vector<char*> argv;
    const std::string bin = test::speedgate_bin();
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  // Kill -9 once a trainer run has finished and the next one is in flight (bounded poll).
  bool mid_trial = false;
  for (int i = 0; i < 2400 && !mid_trial; ++i) {
    auto [running, finished] = running_and_finished(dir_ + "/sg.db");
    mid_trial = running >= 1 && finished >= 1;
    if (!mid_trial) ::usleep(50 * 1000);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(mid_trial) << "the nightly run never got to its second trainer run";

  NightlyReport r = night(options());
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.campaign_id, 1);
  EXPECT_EQ(r.exit_code(), 0) << r.to_json().dump(2);
  Store s(dir_ + "/sg.db");
  EXPECT_EQ(
      count(s, "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND disposition = 'stale'", 1), 1)
      << "the run in flight at the kill is marked stale exactly once";
  EXPECT_EQ(
      count(s, "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND state != 'finished'", 1), 0);
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM campaigns WHERE id >= ?", 1), 1)
      << "no second campaign for the same night";
  EXPECT_EQ(s.campaign(1)->state, "finished");
}

TEST_F(NightlyTest, WarmStartSkipsKnownTrials) {
  NightlyOptions o = options();
  NightlyReport first = night(o);
  ASSERT_EQ(first.exit_code(), 0);
  NightlyReport second = night(o);
  ASSERT_EQ(second.exit_code(), 0);
  EXPECT_FALSE(second.environment_changed);
  EXPECT_GT(second.trials_reused, 0);
  EXPECT_LT(second.trials_run, first.trials_run);

  Store s(dir_ + "/sg.db");
  std::set<std::string> preset_configs;
  for (const auto& c : second.checks) preset_configs.insert(c.config_key);
  std::set<std::string> first_keys;
  for (const auto& t : s.trials(first.campaign_id)) {
    if (t.state == "finished" && t.run_ok) first_keys.insert(t.trial_key);
  }
  SQLite::Statement q(
      raw_db(s),
      "SELECT trial_key, purpose, config_key, reused_from FROM trials WHERE campaign_id = ?");
  q.bind(1, second.campaign_id);
  int rerun_known = 0;
  while (q.executeStep()) {
    const std::string key = q.getColumn(0).getString(), purpose = q.getColumn(1).getString();
    const std::string config = q.getColumn(2).getString();
    if (!q.getColumn(3).isNull()) {
      EXPECT_TRUE(first_keys.count(key)) << key;
      continue;
    }
    // Run again on purpose: tonight's baseline, seed band and baseline memory probe,
    // and the presets' re-verification (candidate runs and their paired speed repeats).
    bool reverify = preset_configs.count(config) > 0;
    for (const auto& pc : preset_configs) {
      const std::string tail = "|" + pc;
      if (!pc.empty() && key.size() >= tail.size() &&
          key.compare(key.size() - tail.size(), tail.size(), tail) == 0) {
        reverify = true;
      }
    }
    if (purpose == "baseline" || purpose == "band" || reverify ||
        (purpose == "memory_probe" && config.empty()))
      continue;
    if (first_keys.count(key)) ++rerun_known;
    EXPECT_FALSE(first_keys.count(key)) << "re-ran a known trial: " << key;
  }
  EXPECT_EQ(rerun_known, 0);
}

TEST_F(NightlyTest, TwoNightsGiveATrendWithTwoPoints) {
  NightlyReport first = night(options());
  NightlyReport second = night(options());
  Store s(dir_ + "/sg.db", /*read_only=*/true);
  nlohmann::json series = dashboard::preset_series(s);
  for (const char* name : {"fast", "fast_80gb"}) {
    ASSERT_TRUE(series.contains(name)) << series.dump();
    ASSERT_EQ(series[name].size(), 2u) << series.dump();
    EXPECT_EQ(series[name][0]["campaign_id"], first.campaign_id);
    EXPECT_EQ(series[name][1]["campaign_id"], second.campaign_id);
    EXPECT_GT(series[name][1]["speedup"].get<double>(), 0.0);
  }
}

}  // namespace
}  // namespace sg::agent::nightly
