// The Slurm executor against a real single-node Slurm cluster (Debian's slurm-wlm and
// munge on loopback), started for this suite by the CTest fixture slurm_cluster_start
// (scripts/slurm/start-local-slurm.sh) and stopped by slurm_cluster_stop, which also
// runs when a test fails. SLURM_CONF comes from the fixture.
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/runner/describe.hpp"
#include "agent/runner/slurm_executor.hpp"
#include "agent/store/store.hpp"
#include "agent/store_sql.hpp"
#include "agent/test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

// Live processes whose command line mentions `needle` (a trial directory).
int processes_mentioning(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string cmd = read_file(e.path().string() + "/cmdline", 1 << 16).value_or("");
    std::string stat = read_file(e.path().string() + "/stat", 1 << 12).value_or("");
    auto rp = stat.rfind(')');
    if (rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] == 'Z') continue;
    if (cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

struct SlurmTest : ::testing::Test {
  std::string dir;
  void SetUp() override {
    ASSERT_NE(std::getenv("SLURM_CONF"), nullptr)
        << "run through ctest: the slurm fixture starts the cluster";
    spdlog::set_level(spdlog::level::warn);
    dir = test::make_temp_dir("slurm");
  }
  void TearDown() override { fs::remove_all(dir); }

  static ExecutorOptions cpu_cluster() {
    ExecutorOptions o;
    o.kind = "slurm";
    o.slurm_gpus_per_rank = 0;  // CPU-only cluster
    o.slurm_poll_s = 0.5;
    return o;
  }
  TrialRequest fake_request(const std::string& tag) const {
    TrialRequest r = test::fake_trial_request(dir + "/" + tag);
    r.name = "sgtest-" + tag;
    return r;
  }
};

TEST_F(SlurmTest, JobsEndWithTheTrainersDisposition) {
  SlurmExecutor ex(cpu_cluster());
  std::string job;
  TrialRequest ok = fake_request("ok");
  ok.on_submitted = [&](const std::string& id) { job = id; };
  TrialOutcome o = ex.run(ok);
  ASSERT_FALSE(o.failure) << o.reason;
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->steps, 3);
  EXPECT_EQ(o.executor, "slurm");
  EXPECT_FALSE(o.job_id.empty());
  EXPECT_EQ(job, o.job_id) << "the job id is reported at submission";
  EXPECT_FALSE(o.slots.empty()) << "the node list";
  EXPECT_TRUE(fs::exists(ok.dir + "/job.sh"));
  EXPECT_TRUE(fs::exists(ok.dir + "/stdout.log"));

  struct Fault {
    const char* fault;
    Disposition want;
  };
  for (const Fault& f :
       {Fault{"oom", Disposition::oom}, Fault{"nan", Disposition::nan},
        Fault{"segv", Disposition::crash}, Fault{"garbage", Disposition::invalid_result}}) {
    test::ScopedEnv env("FAKE_FAULT", f.fault);  // reaches the job through sbatch --export=ALL
    TrialOutcome bad = ex.run(fake_request(f.fault));
    EXPECT_EQ(bad.failure, f.want) << f.fault << ": " << bad.reason;
  }
}

TEST_F(SlurmTest, HangingTrialIsScancelledAtTheDeadlineAndEndsAsTimeout) {
  test::ScopedEnv env("FAKE_FAULT", "hang");
  SlurmExecutor ex(cpu_cluster());
  TrialRequest r = fake_request("hang");
  r.deadline = std::chrono::seconds(3);
  TrialOutcome o = ex.run(r);
  EXPECT_EQ(o.failure, Disposition::timeout) << o.reason;
  EXPECT_NE(o.reason.find("scancelled"), std::string::npos) << o.reason;
  EXPECT_TRUE(o.process.deadline_hit);
  // Nothing of the job is left on the node (bounded wait for Slurm's KillWait).
  int left = 0;
  for (int i = 0; i < 100 && (left = processes_mentioning(r.dir + "/result.json")) > 0; ++i)
    ::usleep(200 * 1000);
  EXPECT_EQ(left, 0);
}

TEST_F(SlurmTest, TwoRankTrialWhoseRankDiesIsACrash) {
  if (!fs::exists(test::real_trainer())) GTEST_SKIP() << test::real_trainer() << " not built";
  test::ScopedEnv env("SPEEDGATE_TEST_FAULT", "rank_crash");
  SlurmExecutor ex(cpu_cluster());
  TrialRequest r = fake_request("rank_crash");
  r.trainer = test::real_trainer();
  r.micro_batch = 1;
  r.world_size = 2;
  r.threads = 1;
  TrialOutcome o = ex.run(r);
  EXPECT_EQ(o.failure, Disposition::crash) << o.reason;
  EXPECT_EQ(o.failed_rank, 1) << o.reason;
  int left = 0;
  for (int i = 0; i < 100 && (left = processes_mentioning(r.dir + "/result.json")) > 0; ++i)
    ::usleep(200 * 1000);
  EXPECT_EQ(left, 0) << "no rank outlives the trial";
}

TEST_F(SlurmTest, TuneRunsACampaignThroughSlurmAndEmitsPresets) {
  ASSERT_TRUE(fs::exists(test::real_trainer()))
      << test::real_trainer() << " is needed for the end-to-end Slurm campaign";
  const std::string shared = dir + "/shared";
  std::vector<std::string> args = test::real_screen_args("wam", test::real_trainer(), 1, 6);
  args.insert(args.begin() + 1,
              {"--executor", "slurm", "--slurm-gpus-per-rank", "0", "--shared-dir", shared});
  auto r = test::run_speedgate(args, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["trials"]["total"], 6);
  EXPECT_EQ(j["baseline"]["disposition"], "accepted");
  for (const char* f : {"presets/fast.env", "presets/fast_80gb.env", "presets/README.md"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  Store s(dir + "/results/sg.db", /*read_only=*/true);
  SQLite::Statement q(raw_db(s),
                      "SELECT executor, job_id, result_path FROM trials WHERE state = 'finished'");
  int rows = 0;
  while (q.executeStep()) {
    ++rows;
    EXPECT_EQ(q.getColumn(0).getString(), "slurm");
    EXPECT_FALSE(q.getColumn(1).getString().empty()) << "job id recorded";
    EXPECT_EQ(q.getColumn(2).getString().rfind(shared, 0), 0u) << "result on the shared path";
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace
}  // namespace sg::agent
