// Executors (agent/runner/executor.hpp): the process group of a multi-rank trial, GPU
// slots of the local executor, the Slurm state mapping, and parallel dispatch in a
// campaign (trials side by side, speed pairs alone, the same verdicts as one at a time).
#include "agent/runner/executor.hpp"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/campaign/campaign.hpp"
#include "agent/common/errors.hpp"
#include "agent/runner/describe.hpp"
#include "agent/runner/local_executor.hpp"
#include "agent/runner/slurm_executor.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

ProcessSpec sh(const std::string& script, const std::string& dir, const std::string& tag) {
  ProcessSpec s;
  s.exe = "/bin/sh";
  s.args = {"-c", script};
  s.env = inherited_env_without_switches();
  s.stdout_log = dir + "/" + tag + ".out";
  s.stderr_log = dir + "/" + tag + ".err";
  return s;
}

// The environment of a live process, from /proc.
std::map<std::string, std::string> environ_of(int pid) {
  std::map<std::string, std::string> env;
  std::string raw = read_file("/proc/" + std::to_string(pid) + "/environ", 1 << 20).value_or("");
  for (std::size_t at = 0; at < raw.size();) {
    std::size_t end = raw.find('\0', at);
    if (end == std::string::npos) end = raw.size();
    std::string kv = raw.substr(at, end - at);
    if (auto eq = kv.find('='); eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    at = end + 1;
  }
  return env;
}

// The live members of a process group.
std::vector<int> group_members(int pgid) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    if (::getpgid(std::stoi(name)) == pgid) out.push_back(std::stoi(name));
  }
  return out;
}

struct ExecutorTest : test::TempDirTest {
  TrialRequest fake_request(const std::string& tag, int steps = 3) const {
    TrialRequest r;
    r.trainer = test::fake_trainer();
    r.workload = "wam";
    r.size = "tiny";
    r.steps = steps;
    r.micro_batch = 2;
    r.dir = dir + "/" + tag;
    r.deadline = std::chrono::seconds(120);
    r.grace = std::chrono::seconds(1);
    return r;
  }
};

TEST_F(ExecutorTest, FailingMemberEndsTheGroupAndDecides) {
  GroupOutcome g = run_process_group(
      {sh("exec sleep 300", dir, "r0"), sh("sleep 0.3; kill -ABRT $$", dir, "r1")});
  ASSERT_EQ(g.failed_member, 1);
  EXPECT_TRUE(g.members[1].signaled);
  EXPECT_EQ(g.members[1].signal, SIGABRT);
  EXPECT_TRUE(g.members[0].signaled) << "the surviving rank is terminated, not waited for";
  EXPECT_EQ(g.members[0].signal, SIGTERM);
  EXPECT_FALSE(g.deadline_hit);
  EXPECT_EQ(g.pgid, g.members[0].pid);
  EXPECT_FALSE(test::group_has_live_members(g.pgid));
}

TEST_F(ExecutorTest, MembersThatSucceedAreAllWaitedFor) {
  GroupOutcome g = run_process_group({sh("sleep 0.5; exit 0", dir, "r0"), sh("exit 0", dir, "r1")});
  EXPECT_EQ(g.failed_member, -1);
  EXPECT_EQ(g.members[0].exit_code, 0);
  EXPECT_EQ(g.members[1].exit_code, 0);
  EXPECT_FALSE(g.members[0].signaled) << "a rank that finished first must not end its peers";
}

TEST_F(ExecutorTest, DeadlineTerminatesEveryMember) {
  ProcessSpec a = sh("exec sleep 300", dir, "r0");
  a.deadline = std::chrono::seconds(1);
  a.grace = std::chrono::seconds(1);
  GroupOutcome g = run_process_group({a, sh("trap '' TERM; sleep 300", dir, "r1")});
  EXPECT_TRUE(g.deadline_hit);
  EXPECT_EQ(g.failed_member, -1);
  EXPECT_TRUE(g.members[1].signaled);
  EXPECT_EQ(g.members[1].signal, SIGKILL) << "a rank ignoring SIGTERM gets SIGKILL after the grace";
  EXPECT_FALSE(test::group_has_live_members(g.pgid));
}

TEST_F(ExecutorTest, MemberThatCannotStartKillsTheOthers) {
  ProcessSpec missing = sh("", dir, "r1");
  missing.exe = dir + "/no-such-trainer";
  GroupOutcome g = run_process_group({sh("exec sleep 300", dir, "r0"), missing});
  EXPECT_EQ(g.failed_member, 1);
  EXPECT_FALSE(g.members[1].started);
  EXPECT_TRUE(g.members[0].signaled);
  EXPECT_FALSE(test::group_has_live_members(g.pgid));
}

TEST_F(ExecutorTest, OneGpuTrialsRunSideBySideOnDisjointSlots) {
  test::ScopedEnv slow("FAKE_STEP_SLEEP", "1");
  LocalExecutor ex({"3", "5"}, 2);
  ASSERT_EQ(ex.capacity(1), 2);
  std::mutex mu;
  std::vector<std::string> seen(2);
  std::vector<TrialOutcome> outs(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      TrialRequest r = fake_request("t" + std::to_string(i));
      r.on_heartbeat = [&, i](const std::string& hb) {
        auto j = nlohmann::json::parse(hb, nullptr, false);
        if (!j.is_object() || !j.contains("pid")) return;
        auto env = environ_of(j["pid"].get<int>());
        std::lock_guard<std::mutex> lock(mu);
        if (env.count("CUDA_VISIBLE_DEVICES"))
          seen[static_cast<std::size_t>(i)] = env["CUDA_VISIBLE_DEVICES"];
      };
      outs[static_cast<std::size_t>(i)] = ex.run(r);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : outs) EXPECT_FALSE(o.failure) << o.reason;
  // Each trial takes the lowest free slot: two different GPUs mean both held one at once.
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), (std::set<std::string>{"3", "5"}));
  EXPECT_NE(outs[0].slots, outs[1].slots);
}

TEST_F(ExecutorTest, TwoRankTrialGetsTheLaunchContract) {
  test::ScopedEnv slow("FAKE_STEP_SLEEP", "1");
  test::ScopedEnv stray("RANK", "7");  // the controller's own rank must not leak into trials
  LocalExecutor ex({"0", "1", "2"}, 3);
  EXPECT_EQ(ex.capacity(2), 1);
  TrialRequest r = fake_request("w2");
  r.world_size = 2;
  std::map<std::string, std::map<std::string, std::string>> by_rank;
  r.on_heartbeat = [&](const std::string& hb) {
    auto j = nlohmann::json::parse(hb, nullptr, false);
    if (!j.is_object() || !j.contains("pid")) return;
    for (int pid : group_members(::getpgid(j["pid"].get<int>()))) {
      auto env = environ_of(pid);
      if (env.count("RANK")) by_rank[env["RANK"]] = env;
    }
  };
  TrialOutcome o = ex.run(r);
  EXPECT_FALSE(o.failure) << o.reason;
  ASSERT_EQ(o.ranks.size(), 2u);
  ASSERT_EQ(by_rank.size(), 2u) << "both ranks seen in the trial's process group";
  for (const char* rank : {"0", "1"}) {
    auto& env = by_rank[rank];
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["LOCAL_RANK"], rank);
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
    EXPECT_GT(std::stoi(env["MASTER_PORT"]), 0);
  }
  EXPECT_EQ(by_rank["0"]["MASTER_PORT"], by_rank["1"]["MASTER_PORT"]);
  EXPECT_TRUE(fs::exists(r.dir + "/stdout.log"));
  EXPECT_TRUE(fs::exists(r.dir + "/stderr.rank1.log"));
}

TEST_F(ExecutorTest, ImpossibleWorldSizeIsAUsageError) {
  ExecutorOptions o;
  o.gpus = 2;
  EXPECT_THROW(make_executor(o, /*trial_world_size=*/4), UsageError);
  o.kind = "kubernetes";
  EXPECT_THROW(make_executor(o), UsageError);
  ExecutorOptions cpu;
  cpu.gpus = 0;
  EXPECT_EQ(make_executor(cpu, 2)->capacity(2), 1)
      << "CPU hosts run one trial at a time by default";
}

TEST(ExecutorCli, FlagsAreDocumentedAndBadOnesExit2WritingNothing) {
  std::string dir = test::make_temp_dir("execcli");
  for (const char* cmd : {"tune", "nightly"}) {
    auto h = test::run_speedgate({cmd, "--help"}, dir);
    EXPECT_EQ(h.code, 0);
    for (const char* flag : {"--executor", "--trial-world-size", "--gpus", "--parallel-trials",
                             "--slurm-partition", "--shared-dir", "--slurm-gpus-per-rank"}) {
      EXPECT_NE(h.out.find(flag), std::string::npos) << cmd << " --help lacks " << flag;
    }
  }
  const std::vector<std::string> base = {"tune",   "--workload", "wam",
                                         "--size", "tiny",       "--db",
                                         "sg.db",  "--trainer",  test::fake_trainer()};
  struct Case {
    std::vector<std::string> extra;
    std::string message;
  };
  for (const Case& c : {Case{{"--executor", "kubernetes"}, "kubernetes"},
                        Case{{"--trial-world-size", "4", "--gpus", "2"}, "needs 4 GPU slots"},
                        Case{{"--shared-dir", dir + "/shared"}, "--executor slurm"},
                        Case{{"--parallel-trials", "0"}, "parallel-trials"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = test::run_speedgate(args, dir);
    EXPECT_EQ(r.code, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/sg.db")) << c.message;
  }
  fs::remove_all(dir);
}

// srun lists failed tasks in the order it hears of them: a peer that exited because rank 1
// aborted may come first, and rank 1 is still the one to blame.
TEST(BlamedSrunTask, ARankKilledByItsOwnSignalIsBlamedOverPeersThatExited) {
  EXPECT_FALSE(blamed_srun_task("srun: job 7 queued\n"));
  const auto aborted = blamed_srun_task(
      "srun: error: n1: task 0: Exited with exit code 1\nsrun: error: n1: task 1: Aborted\n");
  ASSERT_TRUE(aborted);
  EXPECT_EQ(aborted->rank, 1);
  EXPECT_EQ(aborted->what, "Aborted");
  const auto exited = blamed_srun_task(
      "srun: error: n1: task 1: Exited with exit code 3\nsrun: error: n1: task 0: Exited with "
      "exit code 1\n");
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->rank, 1);  // none died by a signal: the first listed
  EXPECT_EQ(exited->what, "Exited with exit code 3");
  const auto killed_peer = blamed_srun_task(
      "srun: error: n1: task 1: Killed\nsrun: error: n1: task 0: Exited with exit code 2\n");
  ASSERT_TRUE(killed_peer);
  EXPECT_EQ(killed_peer->rank, 1);  // SIGKILL is what peers get: not preferred, first listed
}

TEST(DecodeSlurmEnd, StatesMapToDispositions) {
  struct Case {
    std::string state;
    int exit_code, signal;
    bool ours;
    std::optional<Disposition> want;
  };
  ResultParse none;
  none.error = "no result file";
  const std::vector<Case> cases = {{"FAILED", 3, 0, false, Disposition::oom},
                                   {"FAILED", 4, 0, false, Disposition::nan},
                                   {"FAILED", 1, 0, false, Disposition::crash},
                                   {"FAILED", 0, 6, false, Disposition::crash},
                                   {"FAILED", 0, 9, false, Disposition::killed},
                                   {"TIMEOUT", 0, 15, false, Disposition::timeout},
                                   {"CANCELLED", 0, 15, true, Disposition::timeout},
                                   {"CANCELLED", 0, 15, false, Disposition::killed},
                                   {"OUT_OF_MEMORY", 0, 9, false, Disposition::oom},
                                   {"NODE_FAIL", 0, 0, false, Disposition::killed},
                                   {"PREEMPTED", 0, 0, false, Disposition::killed},
                                   {"COMPLETED", 0, 0, false, Disposition::invalid_result},
                                   {"", 0, 0, false, Disposition::crash}};
  for (const auto& c : cases) {
    SlurmEnd e;
    e.job_id = "42";
    e.state = c.state;
    e.exit_code = c.exit_code;
    e.signal = c.signal;
    e.cancelled_by_us = c.ours;
    const SlurmDecode d = decode_slurm_end(e, none);
    ASSERT_TRUE(d.failure) << c.state << " " << c.exit_code << ":" << c.signal;
    EXPECT_EQ(d.failure->disposition, c.want) << c.state << " " << c.exit_code << ":" << c.signal;
    EXPECT_FALSE(d.failure->reason.empty());
  }
  SlurmEnd unsubmitted;
  unsubmitted.submitted = false;
  unsubmitted.submit_error = "sbatch: error: invalid partition";
  const SlurmDecode d = decode_slurm_end(unsubmitted, none);
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->disposition, Disposition::crash);
  EXPECT_NE(d.failure->reason.find("invalid partition"), std::string::npos);
  EXPECT_TRUE(slurm_state_terminal("CANCELLED by 0"));
  EXPECT_FALSE(slurm_state_terminal("COMPLETING"));
  EXPECT_FALSE(slurm_state_terminal("PENDING"));
}

// Parallel dispatch: a campaign on 3 CPU slots against the fake trainer.
CampaignOptions parallel_options(const std::string& dir, int parallel) {
  CampaignOptions o;
  o.trainer = test::fake_trainer();
  o.workload = "wam";
  o.size = "tiny";
  o.db_path = dir + "/sg.db";
  o.memory.budgets = {{"fast", std::int64_t{141} << 30}};
  o.memory.target_micro_batch = 32;
  o.trial.steps = 2;
  o.trial.screen_steps = 2;
  o.trial.seeds = {0, 1000, 2000};
  o.speed.repeats = 2;
  o.speed.max_repeats = 2;
  o.speed.noise_pairs = 0;
  o.search.plan = {"screen"};
  o.executor.gpus = 0;
  o.executor.parallel_trials = parallel;
  return o;
}

struct Interval {
  std::string purpose, key, start, end;
};

std::vector<Interval> finished_intervals(const std::string& db, std::int64_t cid) {
  Store s(db, /*read_only=*/true);
  SQLite::Statement q(
      raw_db(s),
      "SELECT purpose, trial_key, started_at, finished_at, executor, slots FROM trials "
      "WHERE campaign_id = ? AND state = 'finished' ORDER BY id");
  q.bind(1, cid);
  std::vector<Interval> out;
  while (q.executeStep()) {
    out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(),
                   q.getColumn(2).getString(), q.getColumn(3).getString()});
    EXPECT_EQ(q.getColumn(4).getString(), "local");
    EXPECT_EQ(q.getColumn(5).getString().rfind("cpu ", 0), 0u) << q.getColumn(5).getString();
  }
  return out;
}

// Timestamps have whole seconds: strict overlap (a starts before b ends and b before
// a ends) never holds for two trials that ran one after the other.
bool overlap(const Interval& a, const Interval& b) { return a.start < b.end && b.start < a.end; }

TEST(ParallelDispatch, TrialsRunSideBySideAndSpeedPairsAlone) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv slow("FAKE_STEP_SLEEP", "0.8");  // every trial spans a second boundary
  std::string dir = test::make_temp_dir("parallel");
  CampaignOptions o = parallel_options(dir, 3);
  std::int64_t cid = run_campaign(o, describe_trainer(o.trainer));
  auto trials = finished_intervals(o.db_path, cid);
  ASSERT_FALSE(trials.empty());
  std::set<std::string> keys;
  int overlapping = 0, speed = 0;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    EXPECT_TRUE(keys.insert(trials[i].key).second) << "trial run twice: " << trials[i].key;
    const bool is_speed = trials[i].purpose.rfind("speed_", 0) == 0;
    speed += is_speed ? 1 : 0;
    for (std::size_t j = i + 1; j < trials.size(); ++j) {
      if (!overlap(trials[i], trials[j])) continue;
      ++overlapping;
      EXPECT_FALSE(is_speed || trials[j].purpose.rfind("speed_", 0) == 0)
          << "a speed trial shared the host: " << trials[i].key << " and " << trials[j].key;
    }
  }
  EXPECT_GT(overlapping, 0) << "no two trials ran at the same time on 3 slots";
  EXPECT_GT(speed, 0);
  {
    Store s(o.db_path, /*read_only=*/true);
    SQLite::Statement q(
        raw_db(s), "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND state != 'finished'");
    q.bind(1, cid);
    q.executeStep();
    EXPECT_EQ(q.getColumn(0).getInt(), 0) << "every claimed trial is recorded as finished";
  }
  fs::remove_all(dir);
}

TEST(ParallelDispatch, SameVerdictsAsOneTrialAtATime) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  std::map<std::string, std::string> verdicts[2];
  // The gate and memory-probe runs are the same either way. Speed trials differ: one at a
  // time, the gate run is the first pair's candidate side (docs/controller.md, "Order per
  // candidate"); side by side it cannot be, so each pair runs its own.
  std::multiset<std::string> gate_and_probes[2];
  for (int parallel : {1, 3}) {
    std::string dir = test::make_temp_dir("verdicts");
    CampaignOptions o = parallel_options(dir, parallel);
    o.search.plan = {"screen", "greedy"};
    std::int64_t cid = run_campaign(o, describe_trainer(o.trainer));
    Store s(o.db_path, /*read_only=*/true);
    for (const auto& e : s.evaluations(cid)) {
      verdicts[parallel == 1 ? 0 : 1][e.config_key + "@" + std::to_string(e.steps)] =
          std::string(to_string(e.disposition)) + " " + e.gate_class;
    }
    for (const auto& t : s.trials(cid)) {
      // By what runs (the keys differ: a gate run that is a pair's side names the pair).
      if (t.purpose.rfind("speed_", 0) != 0) {
        gate_and_probes[parallel == 1 ? 0 : 1].insert(
            t.purpose + " " + t.config_key + " s" + std::to_string(t.seed) + " n" +
            std::to_string(t.steps) + " b" + std::to_string(t.micro_batch));
      }
    }
    fs::remove_all(dir);
  }
  EXPECT_FALSE(verdicts[0].empty());
  EXPECT_EQ(verdicts[0], verdicts[1]);
  EXPECT_FALSE(gate_and_probes[0].empty());
  EXPECT_EQ(gate_and_probes[0], gate_and_probes[1])
      << "the same gate and probe trials, only in another order";
}

}  // namespace
}  // namespace sg::agent
