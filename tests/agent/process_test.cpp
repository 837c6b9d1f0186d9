// Process supervision (agent/runner/process.*): the start handshake, strays that left
// the trial's process group (setsid), trainers that ignore SIGTERM, and the supervisor
// token every descendant inherits. The fake trainer misbehaves on request.
#include "agent/runner/process.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "agent/common/proc_scan.hpp"
#include "agent/runner/trial.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

struct ProcessSupervision : ::testing::Test {
  std::string dir = test::make_temp_dir("supervise");
  std::string pids = dir + "/pids";
  void SetUp() override { fs::create_directories(pids); }
  void TearDown() override { fs::remove_all(dir); }

  TrialRequest request(std::chrono::milliseconds deadline) const {
    TrialRequest r;
    r.trainer = test::fake_trainer();
    r.workload = "wam";
    r.size = "tiny";
    r.steps = 3;
    r.dir = dir + "/t";
    r.deadline = deadline;
    r.grace = std::chrono::seconds(1);
    return r;
  }
};

TEST_F(ProcessSupervision, GroupIsRecordedBeforeTheTrainerCanRun) {
  test::ScopedEnv pid_dir("FAKE_PID_DIR", pids);
  TrialRequest r = request(std::chrono::seconds(120));
  int recorded = 0;
  bool ran_early = false;
  r.on_started = [&](int pgid) {
    recorded = pgid;
    EXPECT_EQ(::getpgid(pgid), pgid) << "the group exists when it is recorded";
    // Bounded: a trainer let loose now would create its pid file within this wait.
    for (int i = 0; i < 40 && !ran_early; ++i) {
      ::usleep(50 * 1000);
      ran_early = !test::pids_named(pids, "trainer").empty();
    }
  };
  TrialOutcome o = run_trial(r);
  ASSERT_FALSE(o.failure) << o.reason;
  EXPECT_FALSE(ran_early) << "the trainer ran before its group was recorded";
  EXPECT_EQ(recorded, o.pgid);
  ASSERT_EQ(test::pids_named(pids, "trainer"), std::vector<int>{o.pgid})
      << "the trainer leads the recorded group";
}

TEST_F(ProcessSupervision, AFailingStartRecordKillsTheWaitingChild) {
  test::ScopedEnv pid_dir("FAKE_PID_DIR", pids);
  TrialRequest r = request(std::chrono::seconds(120));
  int pgid = 0;
  r.on_started = [&](int g) {
    pgid = g;
    throw std::runtime_error("store unavailable");
  };
  EXPECT_THROW(run_trial(r), std::runtime_error);
  ASSERT_GT(pgid, 0);
  EXPECT_FALSE(test::process_running(pgid));
  EXPECT_TRUE(test::pids_named(pids, "trainer").empty()) << "the child never reached exec";
}

TEST_F(ProcessSupervision, StraysThatLeftTheGroupDieWithAnOkTrial) {
  test::ScopedEnv pid_dir("FAKE_PID_DIR", pids);
  test::ScopedEnv fault("FAKE_FAULT", "setsid_grandchild");
  TrialOutcome o = run_trial(request(std::chrono::seconds(120)));
  ASSERT_FALSE(o.failure) << o.reason;
  const auto setsid = test::pids_named(pids, "setsid"), group = test::pids_named(pids, "group");
  ASSERT_EQ(setsid.size(), 1u);
  ASSERT_EQ(group.size(), 1u);
  EXPECT_FALSE(test::process_running(setsid[0]))
      << "a grandchild in its own session outlived the trial";
  EXPECT_FALSE(test::process_running(group[0]))
      << "a grandchild in the trial's group outlived the trial";
}

TEST_F(ProcessSupervision, TrainerIgnoringSigtermAndItsStraysAreKilledAtTheDeadline) {
  test::ScopedEnv pid_dir("FAKE_PID_DIR", pids);
  test::ScopedEnv fault("FAKE_FAULT", "setsid_hang");
  TrialRequest r = request(std::chrono::seconds(4));
  bool token_seen = false;
  int pgid = 0;
  r.on_started = [&](int g) { pgid = g; };
  r.on_heartbeat = [&](const std::string&) {
    // The setsid grandchild carries the trial's supervisor token in its environment.
    for (int p : test::pids_named(pids, "setsid")) {
      token_seen |= environ_has(p, supervisor_token(::getpid(), pgid), /*prefix=*/false);
    }
  };
  TrialOutcome o = run_trial(r);
  EXPECT_EQ(o.failure, Disposition::timeout) << o.reason;
  EXPECT_TRUE(o.process.signaled);
  EXPECT_EQ(o.process.signal, SIGKILL) << "SIGTERM is ignored: SIGKILL after the grace";
  EXPECT_TRUE(token_seen);
  for (const char* name : {"trainer", "setsid", "group"}) {
    for (int p : test::pids_named(pids, name))
      EXPECT_FALSE(test::process_running(p)) << name << " " << p;
  }
}

TEST_F(ProcessSupervision, TokenNamesTheControllerAndTheGroup) {
  EXPECT_EQ(supervisor_token(12, 345), "SPEEDGATE_SUPERVISOR=12:345");
  // The token's variable never reaches a trainer from the controller's own environment.
  test::ScopedEnv inherited(kSupervisorVariable, "1:2");
  for (const auto& [k, v] : inherited_env_without_switches()) EXPECT_NE(k, kSupervisorVariable);
}

}  // namespace
}  // namespace sg::agent
