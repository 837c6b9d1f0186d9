// Runner: every trial fault of the fake trainer ends as its disposition.
#include "agent/runner/trial.hpp"

#include <signal.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

struct RunnerTest : ::testing::Test {
  std::string dir = test::make_temp_dir("runner");
  void TearDown() override { std::filesystem::remove_all(dir); }

  TrialOutcome run(const std::string& fault, std::chrono::milliseconds deadline = std::chrono::seconds(120)) {
    test::ScopedEnv env("FAKE_FAULT", fault);
    TrialRequest r;
    r.trainer = test::fake_trainer();
    r.workload = "wam";
    r.size = "tiny";
    r.steps = 3;
    r.micro_batch = 2;
    r.dir = dir + "/t";
    r.deadline = deadline;
    r.grace = std::chrono::seconds(1);
    return run_trial(r);
  }
};

TEST_F(RunnerTest, OkRunParsesResultAndKeepsLogs) {
  int beats = 0;
  TrialOutcome o = run("");
  ASSERT_FALSE(o.failure) << o.reason;
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->steps, 3);
  EXPECT_EQ(o.result->step_records.size(), 3u);
  EXPECT_GT(o.result->samples_per_s, 0);
  EXPECT_TRUE(std::filesystem::exists(o.stdout_log));
  EXPECT_TRUE(std::filesystem::exists(o.stderr_log));
  EXPECT_TRUE(std::filesystem::exists(dir + "/t/heartbeat.json"));
  (void)beats;
}

TEST_F(RunnerTest, OomExit3) {
  TrialOutcome o = run("oom");
  EXPECT_EQ(o.failure, Disposition::oom);
  EXPECT_NE(o.reason.find("exit 3"), std::string::npos);
  EXPECT_NE(read_file(o.stderr_log).value_or("").find("out of memory"), std::string::npos);
}

TEST_F(RunnerTest, SigkillWithoutDeadlineIsKilled) {
  TrialOutcome o = run("sigkill");
  EXPECT_EQ(o.failure, Disposition::killed);
  EXPECT_TRUE(o.process.signaled);
  EXPECT_EQ(o.process.signal, SIGKILL);
}

TEST_F(RunnerTest, OtherSignalIsCrash) {
  TrialOutcome o = run("segv");
  EXPECT_EQ(o.failure, Disposition::crash);
  EXPECT_EQ(o.process.signal, SIGSEGV);
}

TEST_F(RunnerTest, HangHitsDeadline) {
  TrialOutcome o = run("hang", std::chrono::seconds(1));
  EXPECT_EQ(o.failure, Disposition::timeout);
  EXPECT_TRUE(o.process.deadline_hit);
}

TEST_F(RunnerTest, HangWithGrandchildHoldingPipesKillsWholeGroup) {
  TrialOutcome o = run("hang_grandchild", std::chrono::seconds(1));
  EXPECT_EQ(o.failure, Disposition::timeout);
  // The group (trainer + sleeping grandchild) is gone.
  EXPECT_FALSE(test::group_has_live_members(o.process.pid));
}

TEST_F(RunnerTest, GrandchildOutlivingAnOkTrainerDoesNotBlock) {
  TrialOutcome o = run("exit_grandchild");  // no deadline would save us here
  EXPECT_FALSE(o.failure) << o.reason;
  EXPECT_FALSE(test::group_has_live_members(o.process.pid));
}

TEST_F(RunnerTest, NanExit4) {
  TrialOutcome o = run("nan");
  EXPECT_EQ(o.failure, Disposition::nan);
}

TEST_F(RunnerTest, CrashExitCode) {
  TrialOutcome o = run("crash");
  EXPECT_EQ(o.failure, Disposition::crash);
  EXPECT_EQ(o.process.exit_code, 1);
}

TEST_F(RunnerTest, BadResultFilesAreInvalidResult) {
  for (const char* fault : {"empty", "partial", "garbage", "wrong_schema", "no_result"}) {
    TrialOutcome o = run(fault);
    EXPECT_EQ(o.failure, Disposition::invalid_result) << fault << ": " << o.reason;
    EXPECT_FALSE(o.result) << fault;
  }
}

TEST_F(RunnerTest, MegabytesOfOutputAreDrainedToTheLog) {
  TrialOutcome o = run("big_output");
  EXPECT_FALSE(o.failure) << o.reason;
  EXPECT_GE(std::filesystem::file_size(o.stdout_log), 2u << 20);
  EXPECT_EQ(o.process.stdout_bytes, std::filesystem::file_size(o.stdout_log));
}

TEST_F(RunnerTest, InheritedSwitchVariablesNeverReachTheTrainer) {
  // The fake exits 2 on an unknown SG_ variable; the runner must strip it.
  test::ScopedEnv stray("SG_NOT_A_SWITCH", "1");
  TrialOutcome o = run("");
  EXPECT_FALSE(o.failure) << o.reason;
}

TEST_F(RunnerTest, SwitchEnvironmentIsPassedAsAList) {
  TrialRequest r;
  r.trainer = test::fake_trainer();
  r.workload = "wam";
  r.size = "tiny";
  r.steps = 3;
  r.micro_batch = 2;
  r.dir = dir + "/t";
  r.switch_env = {{"SG_TEXT_CACHE", "1"}};
  TrialOutcome o = run_trial(r);
  ASSERT_TRUE(o.result) << o.reason;
  EXPECT_EQ(o.result->raw["switches"]["SG_TEXT_CACHE"], "1");
  r.switch_env = {{"SG_TEXT_CACHE", "1; touch /tmp/pwned"}};  // no shell: just a bad value
  o = run_trial(r);
  EXPECT_EQ(o.failure, Disposition::crash);
  EXPECT_NE(o.reason.find("exit 2"), std::string::npos);
}

TEST_F(RunnerTest, MissingTrainerIsCrashNotException) {
  TrialRequest r;
  r.trainer = dir + "/does-not-exist";
  r.dir = dir + "/t";
  TrialOutcome o = run_trial(r);
  EXPECT_EQ(o.failure, Disposition::crash);
  EXPECT_FALSE(o.process.started);
}

TEST(DecodeOutcome, Table) {
  std::string why;
  ProcessOutcome p;
  p.started = true;
  ResultParse none;
  p.exit_code = 3;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::oom);
  p.exit_code = 4;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::nan);
  p.exit_code = 0;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::invalid_result);
  p.exit_code = 139;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::crash);
  p.signaled = true;
  p.signal = SIGKILL;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::killed);
  p.deadline_hit = true;
  EXPECT_EQ(decode_outcome(p, none, &why), Disposition::timeout);
}

TEST(ResultParse, RejectsWrongShapes) {
  EXPECT_FALSE(parse_result_text("").result);
  EXPECT_FALSE(parse_result_text("{\"protocol\": 1, \"status\": \"ok\"").result);
  EXPECT_FALSE(parse_result_text("[1,2]").result);
  EXPECT_FALSE(parse_result_text("{\"protocol\": 2, \"status\": \"ok\"}").result);
  EXPECT_FALSE(parse_result_text("{\"protocol\": 1, \"status\": \"weird\"}").result);
  auto oom = parse_result_text("{\"protocol\": 1, \"status\": \"oom\", \"error\": \"x\"}");
  ASSERT_TRUE(oom.result);
  EXPECT_EQ(oom.result->status, "oom");
}

}  // namespace
}  // namespace sg::agent
