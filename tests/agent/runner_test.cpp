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

  TrialOutcome run(const std::string& fault,
                   std::chrono::milliseconds deadline = std::chrono::seconds(120)) {
    test::ScopedEnv env("FAKE_FAULT", fault);
    TrialRequest r = test::fake_trial_request(dir + "/t");
    r.deadline = deadline;
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
  EXPECT_GE(std::filesystem::file_size(o.stdout_log), 10u << 20);
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

TEST_F(RunnerTest, NonExecutableTrainerIsCrashNotException) {
  TrialRequest r;
  r.trainer = dir + "/not-executable";
  write_file_atomic(r.trainer, "#!/bin/sh\nexit 0\n");
  std::filesystem::permissions(
      r.trainer, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  r.dir = dir + "/t";
  TrialOutcome o = run_trial(r);
  EXPECT_EQ(o.failure, Disposition::crash);
  EXPECT_FALSE(o.process.started);
  EXPECT_FALSE(o.reason.empty());
}

TEST(DecodeOutcome, Table) {
  ProcessOutcome p;
  p.started = true;
  ResultParse none;
  auto disposition = [&] {
    const std::optional<Failure> f = decode_outcome(p, none);
    return f ? std::optional<Disposition>(f->disposition) : std::nullopt;
  };
  p.exit_code = 3;
  EXPECT_EQ(disposition(), Disposition::oom);
  p.exit_code = 4;
  EXPECT_EQ(disposition(), Disposition::nan);
  p.exit_code = 0;
  EXPECT_EQ(disposition(), Disposition::invalid_result);
  p.exit_code = 139;
  EXPECT_EQ(disposition(), Disposition::crash);
  p.signaled = true;
  p.signal = SIGKILL;
  EXPECT_EQ(disposition(), Disposition::killed);
  p.deadline_hit = true;
  EXPECT_EQ(disposition(), Disposition::timeout);
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

// Regression (found through fuzz/result_fuzz.cpp): grad_accum 1e30 was converted to
// int (undefined behaviour), and integers past INT_MAX wrapped: a protocol of 2^32+1
// read as 1, a seed of 2^40 as 0.
TEST(ResultParse, IntegersAreRangeCheckedNeverWrapped) {
  const auto ok = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/fuzz/corpus/result/ok.json").value());
  ASSERT_TRUE(parse_result_text(ok.dump()).result) << parse_result_text(ok.dump()).error;
  auto j = ok;
  j["grad_accum"] = 1e30;
  EXPECT_NE(parse_result_text(j.dump()).error.find("grad_accum"), std::string::npos);
  j = ok;
  j["grad_accum"] = "2";
  EXPECT_NE(parse_result_text(j.dump()).error.find("grad_accum"), std::string::npos);
  j = ok;
  j["protocol"] = (std::int64_t{1} << 32) + 1;
  EXPECT_NE(parse_result_text(j.dump()).error.find("protocol"), std::string::npos);
  j = ok;
  j["seed"] = std::int64_t{1} << 40;
  EXPECT_NE(parse_result_text(j.dump()).error.find("seed"), std::string::npos);
  j = ok;
  j["steps"] = std::uint64_t{1} << 63;
  EXPECT_NE(parse_result_text(j.dump()).error.find("steps"), std::string::npos);
}

TEST(ResultParse, PhasePeaksAreOptionalAndChecked) {
  const auto ok = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/fuzz/corpus/result/ok.json").value());
  auto j = ok;
  j["memory"].erase("phase_peak_allocated_bytes");
  ASSERT_TRUE(parse_result_text(j.dump()).result);
  EXPECT_TRUE(parse_result_text(j.dump()).result->phase_peak_allocated.empty());
  j["memory"]["phase_peak_allocated_bytes"] = {{"forward", 1000}, {"backward", 2500}};
  auto parsed = parse_result_text(j.dump());
  ASSERT_TRUE(parsed.result) << parsed.error;
  EXPECT_EQ(parsed.result->phase_peak_allocated.at("backward"), 2500);
  EXPECT_EQ(parsed.result->phase_peak_allocated.size(), 2u);
  j["memory"]["phase_peak_allocated_bytes"] = {{"forward", "a lot"}};
  EXPECT_NE(parse_result_text(j.dump()).error.find("phase 'forward'"), std::string::npos);
  j["memory"]["phase_peak_allocated_bytes"] = {{"forward", -1}};
  EXPECT_NE(parse_result_text(j.dump()).error.find("phase_peak_allocated_bytes"),
            std::string::npos);
  j["memory"]["phase_peak_allocated_bytes"] = nlohmann::json::array({1, 2});
  EXPECT_NE(parse_result_text(j.dump()).error.find("not an object"), std::string::npos);
}

}  // namespace
}  // namespace sg::agent
