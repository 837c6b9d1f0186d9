// The speedgate binary: usage errors exit 2 and write nothing, --help comes from
// the parser, a campaign killed with SIGKILL mid-trial resumes on the same DB.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/process.hpp>

#include "agent/presets/emit.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

struct CliTest : test::TempDirTest {
  std::vector<std::string> tune(std::vector<std::string> extra) {
    std::vector<std::string> a = {"tune",   "--workload", "wam",
                                  "--size", "tiny",       "--db",
                                  "sg.db",  "--trainer",  test::fake_trainer()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  bool nothing_written() {
    for (const auto& e : fs::directory_iterator(dir)) {
      (void)e;
      return false;
    }
    return true;
  }
};

TEST_F(CliTest, HelpComesFromTheParser) {
  auto r = test::run_speedgate({"--help"}, dir);
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"tune", "presets", "report"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  r = test::run_speedgate({"tune", "--help"}, dir);
  EXPECT_EQ(r.code, 0);
  for (const char* s :
       {"--memory-budget", "--budget-trials", "--budget-minutes", "--target-micro-batch",
        "--target-world-size", "--trainer", "--resume", "--steps", "--seeds", "--threads",
        "--probe-at-target", "--plan", "--executor"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  // tune and nightly declare the campaign options once (agent/cli/campaign_options.cpp):
  // every campaign option of nightly is one of tune's too.
  const std::string tune_help = r.out;
  r = test::run_speedgate({"nightly", "--help"}, dir);
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"--probe-at-target", "--plan", "--micro-batch", "--zero-stage",
                        "--trial-timeout", "--band-factor"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << "nightly " << s;
    EXPECT_NE(tune_help.find(s), std::string::npos) << "tune " << s;
  }
}

TEST_F(CliTest, NoSubcommandIsUsageError) {
  EXPECT_EQ(test::run_speedgate({}, dir).code, 2);
  EXPECT_EQ(test::run_speedgate({"frobnicate"}, dir).code, 2);
}

TEST_F(CliTest, BadTuneInputsExit2AndWriteNothing) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"tune", "--size", "tiny"}, "--workload"},
      {tune({"--memory-budget", "fast=80GB"}), "GiB"},
      {tune({"--memory-budget", "fast"}), "NAME=SIZE"},
      {tune({"--memory-budget", "fast=-3GiB"}), "-3GiB"},
      {tune({"--memory-budget", "fast=80GiB", "--memory-budget", "fast=90GiB"}), "twice"},
      {tune({"--budget-trials", "-5"}), "budget-trials"},
      {tune({"--budget-trials", "5", "--budget-minutes", "3"}), "excludes"},
      {tune({"--steps", "0"}), "steps"},
      {tune({"--steps", "4", "--screen-steps", "8"}), "screen-steps"},
      {tune({"--plan", "screen,nonsense"}), "nonsense"},
      {{"tune", "--workload", "wam", "--size", "tiny", "--db", "sg.db", "--trainer", dir + "/nope"},
       "does not exist"},
      {{"tune", "--workload", "nope", "--size", "tiny", "--db", "sg.db", "--trainer",
        test::fake_trainer()},
       "no workload 'nope'"},
  };
  for (const auto& c : cases) {
    auto r = test::run_speedgate(c.args, dir);
    EXPECT_EQ(r.code, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos)
        << "stderr should name '" << c.message << "':\n"
        << r.err;
    EXPECT_TRUE(nothing_written()) << c.message;
  }
}

TEST_F(CliTest, BadManifestIsUsageError) {
  std::string t = dir + "/bad_trainer.sh";
  write_file_atomic(t, "#!/bin/sh\necho '{\"protocol\": 1, \"workloads\": []}'\n");
  fs::permissions(t, fs::perms::owner_all);
  auto r = test::run_speedgate(
      {"tune", "--workload", "wam", "--size", "tiny", "--db", "sg.db", "--trainer", t}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("manifest: workloads"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/sg.db"));
}

TEST_F(CliTest, ReportAndEmitOnMissingDbExit2) {
  EXPECT_EQ(test::run_speedgate({"report", "--db", "missing.db"}, dir).code, 2);
  EXPECT_EQ(test::run_speedgate({"presets", "emit", "--db", "missing.db", "--out", "p"}, dir).code,
            2);
  EXPECT_TRUE(nothing_written());
}

TEST_F(CliTest, NewerSchemaDbRefusedWithExit2) {
  {
    SQLite::Database raw(dir + "/new.db", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("PRAGMA user_version = 7");
  }
  auto r = test::run_speedgate({"report", "--db", "new.db"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("schema version 7"), std::string::npos) << r.err;
}

TEST_F(CliTest, PresetsCheck) {
  std::string good = dir + "/good.env", bad = dir + "/bad.env";
  write_file_atomic(good, "# ok\nSG_TEXT_CACHE=1\nSG_FAST_MISS=1");
  write_file_atomic(bad, "SG_TEXT_CACHE=1\r\nLD_PRELOAD=/tmp/x.so\n");
  auto r = test::run_speedgate({"presets", "check", good, "--trainer", test::fake_trainer()}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  r = test::run_speedgate({"presets", "check", bad, "--trainer", test::fake_trainer(), "--json"},
                          dir);
  EXPECT_EQ(r.code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["valid"].get<bool>());
  EXPECT_NE(r.err.find("LD_PRELOAD"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 1: contains a carriage return"), std::string::npos) << r.err;
  EXPECT_EQ(test::run_speedgate(
                {"presets", "check", dir + "/missing.env", "--trainer", test::fake_trainer()}, dir)
                .code,
            2);
}

TEST_F(CliTest, TuneEmitReportJson) {
  auto r = test::run_speedgate(
      tune({"--steps", "3", "--screen-steps", "3", "--seeds", "0,1000", "--repeats", "2",
            "--max-repeats", "2", "--noise-pairs", "0", "--plan", "screen", "--target-micro-batch",
            "32", "--presets-out", "presets", "--json"}),
      dir, {{"FAKE_MANIFEST", "small"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);  // stdout is pure JSON; logs went to stderr
  EXPECT_EQ(j["campaign"]["state"], "finished");
  EXPECT_TRUE(fs::exists(dir + "/presets/fast.env"));
  EXPECT_TRUE(fs::exists(dir + "/presets/fast_80gb.env"));
  EXPECT_TRUE(fs::exists(dir + "/presets/README.md"));
  r = test::run_speedgate({"report", "--db", "sg.db", "--json"}, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto rep = nlohmann::json::parse(r.out);
  EXPECT_GT(rep["trials"]["total"].get<int>(), 5);
  EXPECT_EQ(rep["presets"].size(), 2u);
  r = test::run_speedgate({"presets", "check", "presets/fast.env", "--db", "sg.db"}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  // A budget nothing fits: exit 1 (a gate failure, not bad input), other presets still written.
  {
    Store s(dir + "/sg.db");
    raw_db(s).exec(
        "UPDATE campaigns SET options_json = json_set(options_json, '$.memory_budgets.tiny', "
        "1024)");
  }
  r = test::run_speedgate({"presets", "emit", "--db", "sg.db", "--out", "p2"}, dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/p2/fast.env"));
  EXPECT_FALSE(fs::exists(dir + "/p2/tiny.env"));
}

// Reads the preset's KEY=value lines (provenance comments differ between campaigns).
std::string preset_lines(const std::string& path) {
  std::string out, text = read_file(path).value_or("<missing>");
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line[0] != '#') out += line + "\n";
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST_F(CliTest, KilledControllerResumesWithoutRerunningFinishedTrials) {
  namespace bp = boost::process;
  const std::string marker = dir + "/slept";
  const std::vector<std::string> args =
      tune({"--steps", "3", "--screen-steps", "3", "--seeds", "0,1000", "--repeats", "2",
            "--max-repeats", "2", "--noise-pairs", "0", "--target-micro-batch", "32",
            "--presets-out", "presets"});
  bp::environment env = boost::this_process::environment();
  env.set("FAKE_MANIFEST", "small");  // set(): Boost 1.74's operator[] reads out of bounds
  env.set("FAKE_SLEEP_ONCE_IF", "CKPT_LAYERS:" + marker);
  bp::child controller(test::speedgate_bin(), bp::args(args), env, bp::start_dir(dir),
                       bp::std_out > bp::null, bp::std_err > bp::null);
  // Wait (bounded) until the slow trial runs and its process group is recorded.
  std::int64_t victim = 0;
  int orphan_pgid = 0;
  for (int i = 0; i < 600 && !victim; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(marker) || !fs::exists(dir + "/sg.db")) continue;
    Store s(dir + "/sg.db", /*read_only=*/true);
    SQLite::Statement q(raw_db(s),
                        "SELECT id, pgid FROM trials WHERE state = 'running' AND pgid > 0");
    if (q.executeStep()) {
      victim = q.getColumn(0).getInt64();
      orphan_pgid = q.getColumn(1).getInt();
    }
  }
  ASSERT_GT(victim, 0) << "the slow trial never started";
  ::kill(controller.id(), SIGKILL);
  controller.wait();
  EXPECT_FALSE(test::group_has_live_members(orphan_pgid))
      << "the trainer dies with its controller (PR_SET_PDEATHSIG)";

  std::size_t finished_before = 0;
  {
    Store s(dir + "/sg.db", true);
    for (const auto& t : s.trials(1)) finished_before += t.state == "finished" ? 1 : 0;
  }
  auto r = test::run_speedgate(
      args, dir, {{"FAKE_MANIFEST", "small"}, {"FAKE_SLEEP_ONCE_IF", "CKPT_LAYERS:" + marker}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(test::group_has_live_members(orphan_pgid))
      << "the rerun killed the orphan's process group";

  Store s(dir + "/sg.db", true);
  auto trials = s.trials(1);
  int stale = 0;
  std::map<std::string, int> finished_per_key;
  for (const auto& t : trials) {
    if (t.disposition == Disposition::stale) {
      ++stale;
      EXPECT_EQ(t.id, victim);
      continue;
    }
    EXPECT_EQ(t.state, "finished") << t.trial_key;
    ++finished_per_key[t.trial_key];
  }
  EXPECT_EQ(stale, 1) << "marked stale exactly once";
  for (const auto& [key, n] : finished_per_key) EXPECT_EQ(n, 1) << key << " ran twice";
  bool requeued = false;
  for (const auto& t : trials) requeued |= t.requeued_from == victim && t.state == "finished";
  EXPECT_TRUE(requeued);
  EXPECT_GT(finished_before, 0u);

  // The same campaign uninterrupted (marker present: no sleep) emits the same presets.
  std::string clean = dir + "/clean";
  fs::create_directories(clean);
  std::vector<std::string> args2 = args;
  r = test::run_speedgate(args2, clean, {{"FAKE_MANIFEST", "small"}});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"/presets/fast.env", "/presets/fast_80gb.env"}) {
    EXPECT_EQ(preset_lines(dir + f), preset_lines(clean + f)) << f;
    EXPECT_FALSE(preset_lines(dir + f).empty() && std::string(f) == "/presets/fast.env");
  }
}

}  // namespace
}  // namespace sg::agent
