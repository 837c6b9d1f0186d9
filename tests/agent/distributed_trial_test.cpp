// Multi-rank trials through the local executor against the real speedgate-train on CPU
// (Gloo): the ranks get the launch contract and rank 0's result is the trial's; a rank
// that dies (SPEEDGATE_TEST_FAULT=rank_crash: rank 1 aborts at step 1) fails the
// trial as a crash named after that rank, and nothing of the trial's group survives.
// Skipped when the trainer was not built (SPEEDGATE_TEST_TRAINER may point at one).
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/runner/local_executor.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

struct DistributedTrial : test::RealTrainerTest {
  TrialOutcome run_two_ranks(const std::string& tag) {
    LocalExecutor cpu({}, /*parallel_trials=*/1);
    TrialRequest r = test::real_trial_request(dir + "/" + tag, 2);
    r.threads = 1;
    r.world_size = 2;
    r.deadline = std::chrono::seconds(300);
    r.grace = std::chrono::seconds(2);
    return cpu.run(r);
  }
};

TEST_F(DistributedTrial, TwoRanksOnCpuProduceRankZerosResult) {
  TrialOutcome o = run_two_ranks("ok");
  ASSERT_FALSE(o.failure) << o.reason << "\n"
                          << read_file(dir + "/ok/stderr.rank1.log").value_or("");
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.ranks.size(), 2u);
  EXPECT_EQ(o.ranks[0].exit_code, 0);
  EXPECT_EQ(o.ranks[1].exit_code, 0);
  EXPECT_TRUE(fs::exists(dir + "/ok/stderr.rank1.log"));
}

TEST_F(DistributedTrial, RankThatDiesFailsTheTrialAsCrashWithNoOrphans) {
  test::ScopedEnv fault("SPEEDGATE_TEST_FAULT", "rank_crash");
  TrialOutcome o = run_two_ranks("crash");
  EXPECT_EQ(o.failure, Disposition::crash) << o.reason;
  EXPECT_EQ(o.failed_rank, 1) << o.reason;
  EXPECT_NE(o.reason.find("rank 1 of 2"), std::string::npos) << o.reason;
  EXPECT_FALSE(o.process.deadline_hit) << "the peer's failure, not the deadline, ended the trial";
  ASSERT_GT(o.pgid, 0);
  EXPECT_FALSE(test::group_has_live_members(o.pgid)) << "a rank of the trial outlived it";
}

}  // namespace
}  // namespace sg::agent
