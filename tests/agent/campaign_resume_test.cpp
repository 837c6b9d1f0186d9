// Campaigns of the fake trainer that stop and go on: re-runs and --resume reuse every
// finished trial, budgets stop a campaign, and a failing baseline or a non-deterministic
// environment decide how everything is gated.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/common/errors.hpp"
#include "campaign_support.hpp"
#include "store_sql.hpp"

namespace sg::agent {
namespace {

TEST(Campaign, RerunOfAnUnfinishedCampaignRerunsNothingFinished) {
  test::FakeCampaign c("rerun", {"screen"});
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  Manifest m = describe_trainer(c.options.trainer);
  auto cid = run_campaign(c.options, m);
  std::size_t trials = 0;
  {
    Store s(c.options.db_path);
    trials = s.trials(cid).size();
    raw_db(s).exec("UPDATE campaigns SET state = 'running'");  // as if killed just before finishing
  }
  EXPECT_EQ(run_campaign(c.options, m), cid);
  Store s(c.options.db_path);
  EXPECT_EQ(s.trials(cid).size(), trials) << "every finished trial re-used";
}

TEST(Campaign, NonDeterministicEnvironmentGatesEverythingByTolerance) {
  test::FakeCampaign c("nondet", {"screen"});
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv nd("FAKE_NONDETERMINISTIC", "1");
  auto cid = c.run();
  Store s(c.options.db_path);
  EXPECT_EQ(s.campaign(cid)->deterministic, false);
  EXPECT_NE(s.campaign(cid)->note.find("NON-DETERMINISTIC"), std::string::npos);
  for (const auto& e : s.evaluations(cid)) EXPECT_EQ(e.gate_class, "tolerance") << e.config_key;
}

TEST(Campaign, BaselineFailureIsAGateFailure) {
  test::FakeCampaign c("basefail");
  test::ScopedEnv crash("FAKE_FAULT", "crash");
  EXPECT_THROW(c.run(), GateFailure);
}

TEST(Campaign, TrialBudgetIsRespected) {
  test::FakeCampaign c("budget");
  c.options.budget.trials = 9;
  auto cid = c.run();
  Store s(c.options.db_path);
  EXPECT_EQ(s.trials(cid).size(), 9u);
  EXPECT_EQ(s.campaign(cid)->state, "finished");
}

// config_key and disposition of every evaluation of `cid`, sorted.
std::vector<std::string> sorted_verdicts(Store& s, std::int64_t cid) {
  std::vector<std::string> out;
  for (const auto& e : s.evaluations(cid))
    out.push_back(e.config_key + " " + std::string(to_string(e.disposition)));
  std::sort(out.begin(), out.end());
  return out;
}

// Budget slices (how the H200 campaign runs in 10-minute device calls): a campaign that
// finished by spending its budget is continued by --resume, with nothing finished re-run,
// and ends with the same evaluations as one uninterrupted campaign; a plain re-run starts
// a new campaign instead.
TEST(Campaign, ResumeContinuesACampaignInBudgetSlices) {
  spdlog::set_level(spdlog::level::warn);
  std::string dir = test::make_temp_dir("slices");
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  CampaignOptions whole = test::fake_options(dir + "/whole");
  whole.search.plan = {"screen"};
  const Manifest m = describe_trainer(whole.trainer);
  const auto whole_id = run_campaign(whole, m);
  std::size_t whole_trials = 0;
  std::vector<std::string> whole_evals;
  {
    Store s(whole.db_path);
    whole_trials = s.trials(whole_id).size();
    whole_evals = sorted_verdicts(s, whole_id);
  }
  ASSERT_GT(whole_trials, 6u);

  CampaignOptions slice = test::fake_options(dir + "/sliced");
  slice.search.plan = {"screen"};
  slice.budget.trials = 4;
  const auto cid = run_campaign(slice, m);
  {
    Store s(slice.db_path);
    ASSERT_EQ(s.campaign(cid)->state, "finished");
    ASSERT_EQ(s.trials(cid).size(), 4u);
  }
  slice.require_resume = true;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(run_campaign(slice, m), cid) << "slice " << i << " continues the same campaign";
    Store s(slice.db_path);
    if (s.trials(cid).size() >= whole_trials) break;
  }
  Store s(slice.db_path);
  EXPECT_EQ(s.trials(cid).size(), whole_trials) << "no trial run twice";
  EXPECT_EQ(sorted_verdicts(s, cid), whole_evals)
      << "one row per evaluation, the same verdicts as without slices";
  slice.require_resume = false;
  EXPECT_NE(run_campaign(slice, m), cid) << "without --resume a finished campaign is not continued";
  std::filesystem::remove_all(dir);
}

TEST(Campaign, ResumeWithoutAnyCampaignIsAUsageError) {
  test::FakeCampaign c("noresume");
  c.options.require_resume = true;
  EXPECT_THROW(c.run(), UsageError);
}

}  // namespace
}  // namespace sg::agent
