// The trial service (agent/trial/trial_service.hpp): trial keys (what resumes match on),
// stored outcomes re-used without a run, and the budget.
#include "agent/trial/trial_service.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "store_support.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

struct TrialServiceTest : ::testing::Test {
  void SetUp() override {
    dir = test::make_temp_dir("trial-service");
    store = std::make_unique<Store>(dir + "/t.db");
    cid = store->create_campaign(test::campaign_row("fake"));
    settings.trainer = "fake";
    settings.workload = "wam";
    settings.size = "tiny";
    settings.db_path = dir + "/t.db";
    settings.runs_dir = dir + "/runs";
    settings.executor.gpus = 0;
  }
  void TearDown() override {
    store.reset();
    std::filesystem::remove_all(dir);
  }
  TrialService service() { return TrialService(*store, cid, manifest, settings); }

  std::string dir;
  std::unique_ptr<Store> store;
  std::int64_t cid = 0;
  Manifest manifest;
  TrialSettings settings;
};

TEST_F(TrialServiceTest, KeysNameEverythingTheTrialRuns) {
  const Config c = {{"FAST", "1"}};
  const TrialPlan p{"candidate",  c,     /*seed=*/0, /*steps=*/4, /*micro_batch=*/2,
                    /*repeat=*/1, "pair"};
  EXPECT_EQ(service().key_of(p), "candidate|" + config_key(c) + "|s0|n4|b2|g1|t2|r1|pair");
  settings.world_size = 2;
  EXPECT_EQ(service().key_of(p), "candidate|" + config_key(c) + "|s0|n4|b2|g1|t2|r1|pair|w2");
  TrialPlan rounding{"rounding", {}, 0, 4, 2, 0, "", std::nullopt, /*perturb=*/0.5};
  EXPECT_EQ(service().key_of(rounding),
            "rounding|" + config_key(Config{}) + "|s0|n4|b2|g1|t2|r0||w2|p0.5");
  TrialPlan kernel;
  kernel.purpose = kKernelTimingPurpose;
  kernel.kernel = KernelTrialSpec{"rope", {"plain", "v=2"}, 31};
  // A kernel trial runs on one rank whatever the campaign's trials do.
  EXPECT_EQ(service().key_of(kernel),
            "kernel_timing|" + config_key(Config{}) + "|s0|n0|b1|g1|t2|r0||krope|rep31|plain|v=2");
}

TEST_F(TrialServiceTest, AStoredOutcomeIsReusedWithoutARun) {
  TrialService trials = service();
  const TrialPlan p{"candidate", {{"FAST", "1"}}, 0, 4, 2, 0, ""};
  EXPECT_FALSE(trials.stored(p));
  TrialRow t;
  t.campaign_id = cid;
  t.trial_key = trials.key_of(p);
  t.purpose = p.purpose;
  t.config_key = config_key(p.config);
  const std::int64_t id = store->claim_trial(t);
  TrialFinish f;
  f.disposition = Disposition::oom;
  f.reason = "out of memory";
  store->finish_trial(id, f);
  // The trainer "fake" does not exist: a run would fail differently.
  TrialRun r = trials.run(p);
  EXPECT_EQ(r.trial_id, id);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(*r.failure, Disposition::oom);
  EXPECT_EQ(r.reason, "out of memory");
  EXPECT_EQ(trials.trials_run(), 0);
}

TEST_F(TrialServiceTest, TheBudgetCountsTrainerRuns) {
  settings.budget_trials = 1;
  TrialService trials = service();
  EXPECT_TRUE(trials.budget_left(0));
  EXPECT_FALSE(trials.budget_left(1));
  settings.budget_trials = 0;
  EXPECT_TRUE(service().budget_left(1000));
}

}  // namespace
}  // namespace sg::agent
