// Helpers shared by the agent tests: temp dirs, the fake trainer, running the
// speedgate binary as a subprocess.
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/common/files.hpp"
#include "agent/runner/process.hpp"
#include "agent/runner/trial.hpp"

namespace sg::agent::test {

inline std::string make_temp_dir(const std::string& tag) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("sgtest-" + tag + "-XXXXXX")).string();
  char* d = ::mkdtemp(tmpl.data());
  return d ? std::string(d) : std::string();
}

inline std::string fake_trainer() {
  return std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/fake_trainer.py";
}
inline std::string speedgate_bin() { return std::string(SPEEDGATE_BIN_DIR) + "/speedgate"; }

// The real trainer: SPEEDGATE_TEST_TRAINER when set, else build/bin/speedgate-train.
inline std::string real_trainer() {
  if (const char* t = std::getenv("SPEEDGATE_TEST_TRAINER")) return t;
  return std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train";
}

// A 3-step wam/tiny trial of the fake trainer in `dir` (micro batch 2, 120 s deadline).
inline TrialRequest fake_trial_request(const std::string& dir) {
  TrialRequest r;
  r.trainer = fake_trainer();
  r.workload = "wam";
  r.size = "tiny";
  r.steps = 3;
  r.micro_batch = 2;
  r.dir = dir;
  r.deadline = std::chrono::seconds(120);
  r.grace = std::chrono::seconds(1);
  return r;
}

// A wam/tiny trial of the real trainer in `dir`: `steps` steps at micro-batch 1.
inline TrialRequest real_trial_request(const std::string& dir, int steps) {
  TrialRequest r;
  r.trainer = real_trainer();
  r.workload = "wam";
  r.size = "tiny";
  r.steps = steps;
  r.micro_batch = 1;
  r.dir = dir;
  return r;
}

// `speedgate tune` of the fake trainer on wam/tiny: the screen plan, 3 steps, two seeds.
inline std::vector<std::string> fake_tune_args(int repeats = 1) {
  // clang-format off
  return {"tune", "--workload", "wam", "--size", "tiny", "--db", "sg.db",
          "--trainer", fake_trainer(), "--steps", "3", "--screen-steps", "3",
          "--seeds", "0,1000", "--repeats", std::to_string(repeats), "--plan", "screen",
          "--target-micro-batch", "32", "--memory-budget", "fast=141GiB"};
  // clang-format on
}

// `speedgate tune` of `trainer` on `workload`/tiny with its DB at `db`: `steps` steps
// (`screen_steps` to screen), two seeds and exactly two speed pairs per evaluation (no
// noise pairs); `more` follows.
inline std::vector<std::string> tune_args(const std::string& workload, const std::string& db,
                                          const std::string& trainer, int steps, int screen_steps,
                                          const std::vector<std::string>& more) {
  // clang-format off
  std::vector<std::string> args = {
      "tune", "--workload", workload, "--size", "tiny", "--db", db, "--trainer", trainer,
      "--steps", std::to_string(steps), "--screen-steps", std::to_string(screen_steps),
      "--seeds", "0,1000", "--repeats", "2", "--max-repeats", "2", "--noise-pairs", "0"};
  // clang-format on
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// tune_args() of a real trainer, screening at most `budget_trials` trials into
// results/sg.db (no rounding band, target micro-batch 2), presets into presets/, a JSON
// summary on stdout.
inline std::vector<std::string> real_screen_args(const std::string& workload,
                                                 const std::string& trainer, int steps,
                                                 int budget_trials) {
  // clang-format off
  return tune_args(workload, "results/sg.db", trainer, steps, 1,
                   {"--perturb-eps", "0", "--plan", "screen",
                    "--budget-trials", std::to_string(budget_trials),
                    "--target-micro-batch", "2", "--presets-out", "presets", "--json"});
  // clang-format on
}

struct CliRun {
  int code = -1;
  std::string out, err;
};

// Runs `exe args` with its logs in `log_dir` (removed afterwards); extra environment
// entries appended to the inherited one.
inline CliRun run_exe(const std::string& exe, const std::vector<std::string>& args,
                      const std::string& log_dir,
                      const std::vector<std::pair<std::string, std::string>>& extra_env,
                      std::chrono::seconds deadline) {
  ProcessSpec spec;
  spec.exe = exe;
  spec.args = args;
  spec.env = inherited_env_without_switches();
  for (const auto& kv : extra_env) spec.env.push_back(kv);
  spec.stdout_log = log_dir + "/.cli.out";
  spec.stderr_log = log_dir + "/.cli.err";
  spec.deadline = deadline;
  ProcessOutcome p = run_process(spec);
  CliRun r;
  r.code = p.signaled ? 128 + p.signal : p.exit_code;
  r.out = read_file(spec.stdout_log).value_or("");
  r.err = read_file(spec.stderr_log).value_or("");
  std::filesystem::remove(spec.stdout_log);
  std::filesystem::remove(spec.stderr_log);
  return r;
}

// Runs build/bin/speedgate with args in `cwd`; extra environment entries appended.
inline CliRun run_speedgate(
    const std::vector<std::string>& args, const std::string& cwd,
    const std::vector<std::pair<std::string, std::string>>& extra_env = {}) {
  std::vector<std::string> full = {"-C", cwd, speedgate_bin()};
  full.insert(full.end(), args.begin(), args.end());
  return run_exe("/usr/bin/env", full, cwd, extra_env, std::chrono::seconds(300));
}

// A screening campaign of the real trainer (real_screen_args) on `workload`/tiny in `dir`,
// its JSON summary in `*summary`. Fails the test unless it exits 0 with an accepted
// baseline that repeats bitwise (it runs on the CPU).
inline void run_real_screen(const std::string& dir, const std::string& workload, int steps,
                            int budget_trials, nlohmann::json* summary) {
  auto r = run_speedgate(real_screen_args(workload, real_trainer(), steps, budget_trials), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  *summary = nlohmann::json::parse(r.out);
  EXPECT_EQ((*summary)["campaign"]["deterministic"], true)
      << "CPU, 2 threads: the " << workload << " baseline must repeat bitwise";
  ASSERT_TRUE((*summary)["baseline"].is_object());
  EXPECT_EQ((*summary)["baseline"]["disposition"], "accepted");
}

// True when some process of group `pgid` is alive right now (zombies do not
// count: they are dead, waiting for whoever adopted them to reap them).
inline bool group_alive_now(int pgid) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string stat = read_file(e.path().string() + "/stat", 1 << 16).value_or("");
    auto rp = stat.rfind(')');
    if (rp == std::string::npos || rp + 2 >= stat.size()) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + rp + 2, "%c %d %d", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') return true;
  }
  return false;
}

// Like group_alive_now, but gives a member that is in the middle of dying up to
// 10 s to finish (a bounded wait, not a timing assertion).
inline bool group_has_live_members(int pgid) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!group_alive_now(pgid)) return false;
    ::usleep(100 * 1000);
  }
  return true;
}

// True when `pid` exists and is not a zombie.
inline bool process_running(int pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat", 1 << 16).value_or("");
  auto rp = stat.rfind(')');
  return rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] != 'Z' &&
         stat[rp + 2] != 'X';
}

// Gives a process that is in the middle of dying up to 10 s (a bounded wait).
inline bool still_running_after_wait(int pid) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!process_running(pid)) return false;
    ::usleep(100 * 1000);
  }
  return true;
}

// The pids of the files `prefix`.PID in `dir` (the fake trainer's FAKE_PID_DIR).
inline std::vector<int> pids_named(const std::string& dir, const std::string& prefix) {
  std::vector<int> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix + ".", 0) == 0)
      out.push_back(std::atoi(name.c_str() + prefix.size() + 1));
  }
  return out;
}

// A temp dir named after the running test's suite ('/' of parameterised suites as '_').
inline std::string temp_dir_for_suite() {
  std::string tag = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
  for (char& c : tag) c = c == '/' ? '_' : c;
  return make_temp_dir(tag);
}

// `dir`: a temp dir of the test's own, removed after it.
struct TempDirTest : ::testing::Test {
  std::string dir = temp_dir_for_suite();
  void TearDown() override { std::filesystem::remove_all(dir); }
};

// A test of the real trainer (real_trainer()), skipped when it was not built; `dir` as in
// TempDirTest.
struct RealTrainerTest : TempDirTest {
  void SetUp() override {
    if (!std::filesystem::exists(real_trainer())) GTEST_SKIP() << real_trainer() << " not built";
  }
};

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const std::string& k, const std::string& v) : k_(k) {
    ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(k_.c_str()); }

 private:
  std::string k_;
};

}  // namespace sg::agent::test
