// A new user's first runs (issue 29 item 1): in a fresh clone, `presets emit` and
// `nightly` with their default paths write under results/ (git-ignored) and never touch
// the committed presets/; a nightly pointed at presets/ measured on another device kind
// skips them, says why, and leaves every committed byte as it was.
#include <filesystem>

#include <gtest/gtest.h>

#include "agent/cli/campaign_options.hpp"
#include "agent/common/files.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

std::string fake_nightly_trainer() {
  return std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/fake_trainer_nightly.py";
}

// stdout of a shell command run in `cwd`.
std::string shell(const std::string& cwd, const std::string& cmd) {
  std::string out_path = cwd + "/../shell.out";
  int rc = std::system(("cd '" + cwd + "' && " + cmd + " > '" + out_path + "' 2>&1").c_str());
  std::string out = read_file(out_path).value_or("");
  fs::remove(out_path);
  return rc == 0 ? out : "FAILED(" + std::to_string(rc) + "): " + out;
}

struct FirstRunTest : ::testing::Test {
  std::string dir = test::make_temp_dir("firstrun");
  std::string clone = dir + "/clone";
  void SetUp() override {
    ASSERT_FALSE(dir.empty());
    const std::string out =
        shell(dir, "git clone -q --depth 1 file://" + std::string(SPEEDGATE_SOURCE_DIR) + " clone");
    ASSERT_EQ(out.rfind("FAILED", 0), std::string::npos) << out;
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string git_status() { return shell(clone, "git status --porcelain --untracked-files=all"); }
  std::vector<std::string> small(std::vector<std::string> args) {
    for (const char* a :
         {"--steps", "4", "--screen-steps", "2", "--repeats", "1", "--plan", "screen"})
      args.push_back(a);
    return args;
  }
};

TEST_F(FirstRunTest, DefaultsWriteUnderResultsAndLeaveTheCloneClean) {
  const std::string before = read_file(clone + "/presets/fast.env").value_or("");
  ASSERT_FALSE(before.empty());
  auto t = test::run_speedgate(small({"tune", "--workload", "wam", "--size", "tiny", "--trainer",
                                      fake_nightly_trainer(), "--budget-trials", "30"}),
                               clone);
  ASSERT_LE(t.code, 1) << t.err;
  auto e = test::run_speedgate({"presets", "emit"}, clone);
  ASSERT_LE(e.code, 1) << e.err;
  EXPECT_TRUE(fs::exists(clone + "/results/presets/README.md")) << e.out;
  // A CPU campaign's preset says so, names its trainer and how to use it with that trainer.
  const std::string fast = read_file(clone + "/results/presets/fast.env").value_or("");
  EXPECT_NE(fast.find("# speedgate preset 'fast' for CPU hosts (memory budget 141.00 GiB;"),
            std::string::npos)
      << fast;
  EXPECT_NE(fast.find("# measured on: cpu with the trainer " + fake_nightly_trainer()),
            std::string::npos)
      << fast;
  EXPECT_NE(fast.find("# use: set -a; . results/presets/fast.env; set +a; " +
                      fake_nightly_trainer() + " run ..."),
            std::string::npos)
      << fast;
  EXPECT_EQ(fast.find("GPUs with"), std::string::npos) << fast;
  // Its README: each switch's default, doc and its own gain from its single-switch screen.
  const std::string md = read_file(clone + "/results/presets/README.md").value_or("");
  EXPECT_NE(md.find("| TEXT_CACHE | `SG_TEXT_CACHE` | `0` | "), std::string::npos) << md;
  EXPECT_NE(md.find("(`TEXT_CACHE=1`, 2 steps, evaluation "), std::string::npos) << md;
  // No --workload, --size, --trainer, --db or --presets-dir: all from the defaults.
  auto n = test::run_speedgate(small({"nightly", "--budget-minutes", "30"}), clone);
  EXPECT_EQ(n.code, 0) << n.out << n.err;
  EXPECT_NE(n.err.find("nightly: wam tiny with " + fake_nightly_trainer()), std::string::npos)
      << n.err;
  EXPECT_EQ(git_status(), "") << "defaults wrote into the clone's tracked tree";
  EXPECT_EQ(read_file(clone + "/presets/fast.env").value_or(""), before);
}

TEST_F(FirstRunTest, NightlySkipsPresetsOfAnotherDeviceKind) {
  auto t = test::run_speedgate(small({"tune", "--workload", "wam", "--size", "tiny", "--trainer",
                                      fake_nightly_trainer(), "--budget-trials", "30"}),
                               clone);
  ASSERT_LE(t.code, 1) << t.err;
  auto n = test::run_speedgate(
      small({"nightly", "--budget-minutes", "30", "--presets-dir", "presets"}), clone);
  EXPECT_EQ(n.code, 0) << n.out << n.err;
  EXPECT_NE(n.out.find("preset fast: skipped (skipped: measured on NVIDIA H200, this host is cpu)"),
            std::string::npos)
      << n.out;
  EXPECT_NE(n.out.find("preset fast_80gb: skipped"), std::string::npos) << n.out;
  EXPECT_EQ(n.out.find("wrote"), std::string::npos) << n.out;
  EXPECT_EQ(git_status(), "") << "an H200 preset was rewritten on a CPU host";

  // The H200 preset against the real trainer's manifest on this CPU host: valid, not judged.
  const std::string trainer = std::string(SPEEDGATE_BIN_DIR) + "/speedgate-train";
  if (!std::filesystem::exists(trainer)) GTEST_SKIP() << trainer << " not built (agent-only build)";
  auto c =
      test::run_speedgate({"presets", "check", "presets/fast.env", "--trainer", trainer}, clone);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("presets/fast.env: valid ("), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("against the manifest of " + trainer + " (--trainer)"), std::string::npos)
      << c.out;
  EXPECT_NE(c.err.find("skipped: measured on NVIDIA H200, this host is cpu"), std::string::npos)
      << c.err;
}

// A preset naming a switch this host's trainer cannot run is valid (a warning, exit 0);
// --strict asks "can I run it here" (exit 2); a typo is an error with a suggestion.
TEST(PresetsCheck, UnavailableIsAWarningUnlessStrict) {
  const std::string dir = test::make_temp_dir("check");
  write_file_atomic(dir + "/gpu.env", "SG_TEXT_CACHE=1\nSG_CUDA_GRAPHS=1\n");
  write_file_atomic(dir + "/typo.env", "SG_TEXT_CACHES=1\n");
  auto r =
      test::run_speedgate({"presets", "check", "gpu.env", "--trainer", test::fake_trainer()}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gpu.env: valid (2 switches) against the manifest of " +
                       test::fake_trainer() + " (--trainer)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("cannot run on this host: switch CUDA_GRAPHS is unavailable: needs CUDA"),
            std::string::npos)
      << r.err;
  r = test::run_speedgate(
      {"presets", "check", "gpu.env", "--strict", "--trainer", test::fake_trainer()}, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  r = test::run_speedgate({"presets", "check", "typo.env", "--trainer", test::fake_trainer()}, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown switch SG_TEXT_CACHES (not in the trainer manifest); did you mean "
                       "'SG_TEXT_CACHE'?"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

// Typos are answered with the closest names that exist and the list of them (item 8).
TEST(DidYouMean, CommandsFlagsWorkloadsAndSizes) {
  const std::string dir = test::make_temp_dir("typo");
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"tunee"},
       "unknown command 'tunee'; did you mean 'tune'? (commands: tune, presets, report, serve, "
       "nightly)"},
      {{"presets", "emitt"}, "unknown command 'emitt'; did you mean 'emit'?"},
      {{"tune", "--workload", "wam", "--size", "tiny", "--budget-trails", "3"},
       "unknown flag --budget-trails; did you mean '--budget-trials'? (`speedgate tune --help` "
       "lists them)"},
      {{"tune", "--workload", "wma", "--size", "tiny", "--budget-trials", "1", "--db", "sg.db",
        "--trainer", test::fake_trainer()},
       "the trainer has no workload 'wma'; did you mean 'wam'? (workloads: "},
      {{"tune", "--workload", "wam", "--size", "tinny", "--budget-trials", "1", "--db", "sg.db",
        "--trainer", test::fake_trainer()},
       "workload 'wam' has no size 'tinny'; did you mean 'tiny'? (sizes: "},
  };
  for (const auto& [args, message] : cases) {
    auto r = test::run_speedgate(args, dir);
    EXPECT_EQ(r.code, 2) << args.front();
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

TEST(HostThreads, OneThreadOnTwoCoresHalfTheCoresAboveTwoOnAGpuHost) {
  EXPECT_EQ(host_threads(1, 0), 1);
  EXPECT_EQ(host_threads(2, 0), 1);
  EXPECT_EQ(host_threads(16, 0), 8);
  EXPECT_EQ(host_threads(2, 1), 2);
}

}  // namespace
}  // namespace sg::agent
