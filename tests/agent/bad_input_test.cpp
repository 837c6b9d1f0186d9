// Bad input at every entry point (docs/reliability.md): CLI arguments, memory
// budgets, files that are not databases, manifests and presets. Each exits 2 with a
// message naming the problem and writes nothing: the directory holds exactly the
// files the test put there, byte for byte.
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

struct BadInputTest : test::TempDirTest {
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      files[e.path().string()] =
          e.is_regular_file() ? read_file(e.path().string(), 8 << 20).value_or("?") : "<dir>";
    }
    return files;
  }
  void write(const std::string& name, const std::string& content, bool executable = false) {
    write_file_atomic(dir + "/" + name, content);
    if (executable) fs::permissions(dir + "/" + name, fs::perms::owner_all);
  }
  // Runs speedgate; expects exit 2, `message` on stderr and the directory unchanged.
  void expect_refused(const std::vector<std::string>& args, const std::string& message) {
    const auto before = snapshot();
    auto r = test::run_speedgate(args, dir, {{"FAKE_MANIFEST", "small"}});
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos)
        << cmd << ": stderr should name '" << message << "':\n"
        << r.err;
    EXPECT_EQ(snapshot(), before) << cmd << " wrote something";
  }
  std::vector<std::string> tune(std::vector<std::string> extra,
                                const std::string& trainer = test::fake_trainer()) const {
    std::vector<std::string> a = {"tune", "--workload", "wam",       "--size", "tiny",
                                  "--db", "sg.db",      "--trainer", trainer};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

TEST_F(BadInputTest, MemoryBudgetsTakeIecUnitsOnly) {
  // (--memory-budget value, what stderr must name)
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fast=80gb", "80gb"},
      {"fast=80GB", "decimal units like GB are refused"},
      {"fast=80 GiB", "80 GiB"},
      {"fast=1e3GiB", "1e3GiB"},
      {"fast=0GiB", "must be positive"},
      {"fast=0.5B", "must be positive"},
      {"fast=1.2.3GiB", "1.2.3GiB"},
      {"Fast=80GiB", "Fast"},
      {"../x=80GiB", "../x"},
      {"=80GiB", "NAME=SIZE"},
  };
  for (const auto& [value, message] : cases)
    expect_refused(tune({"--memory-budget", value}), message);
}

TEST_F(BadInputTest, NegativeAndZeroNumbersAreRefusedByName) {
  // (option, bad value): stderr must name the option.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--budget-minutes", "-1"}, {"--budget-trials", "0"}, {"--trial-timeout", "-5"},
      {"--threads", "0"},         {"--repeats", "-2"},      {"--target-micro-batch", "-2"},
      {"--zero-stage", "4"},      {"--seeds", "a,b"},
  };
  for (const auto& [option, value] : cases) expect_refused(tune({option, value}), option);
  expect_refused({"nightly", "--workload", "wam", "--size", "tiny", "--db", "sg.db", "--trainer",
                  test::fake_trainer(), "--budget-minutes", "-5"},
                 "--budget-minutes");
  expect_refused({"serve", "--db", "sg.db", "--listen", "127.0.0.1:99999"}, "99999");
}

// Issue 31: options that used to be found only after the campaign, or never.
TEST_F(BadInputTest, EveryOptionIsCheckedBeforeAnyTrialRuns) {
  expect_refused(tune({"--trial-timeout", "nan"}), "--trial-timeout");
  expect_refused(tune({"--trial-timeout", "1e-9"}), "--trial-timeout");
  expect_refused(tune({"--trial-timeout", "9.3e9"}), "--trial-timeout");
  expect_refused(tune({"--budget-minutes", "inf"}), "--budget-minutes");
  expect_refused(tune({"--band-factor", "nan"}), "--band-factor");
  expect_refused({"tune", "--workload", "wam", "--size", "tiny", "--db", "", "--trainer",
                  test::fake_trainer()},
                 "--db");
  auto with_db = [&](const std::string& db) {
    return std::vector<std::string>{"tune",   "--workload", "wam",
                                    "--size", "tiny",       "--db",
                                    db,       "--trainer",  test::fake_trainer()};
  };
  expect_refused(with_db(":memory:"), "in-memory databases and URIs are refused");
  expect_refused(with_db("file:sg.db?mode=memory"), "URIs");
  fs::create_directories(dir + "/adir");
  expect_refused(with_db("adir"), "is a directory");
  expect_refused(with_db("/proc/sg/sg.db"), "cannot create anything in /proc");
  expect_refused(tune({"--memory-budget", std::string(300, 'b') + "=80GiB"}),
                 "longer than 64 characters");
  expect_refused(tune({"--presets-out", "/proc/x"}), "--presets-out '/proc/x'");
  write("afile", "x");
  expect_refused(tune({"--presets-out", "afile"}), "is not a directory");
  expect_refused(tune({"--gpus", "0", "--trial-world-size", "1000"}),
                 "--trial-world-size 1000 is more than");
  expect_refused(tune({"--threads", "100000"}), "--threads 100000 is more than");
  expect_refused({"tune", "--workload", "wam", "--size", "tiny", "--db", "sg.db", "--trainer", ""},
                 "--trainer");
  expect_refused(tune({"--seeds", ""}), "--seeds");
  expect_refused(tune({"--seeds", "0,0"}), "seed 0 is given twice");
  expect_refused({"nightly", "--workload", "wam", "--size", "tiny", "--db", "sg.db", "--trainer",
                  test::fake_trainer(), "--budget-minutes", "5", "--presets-dir", "/proc/x"},
                 "--presets-dir");
}

// Issue 31, item 9: range errors used to print the largest double in 309 digits.
TEST_F(BadInputTest, RangeErrorsPrintNumbersCompactly) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {tune({"--prune-rounds", "-1"}), "Value -1 is not a finite number >= 0"},
      {tune({"--steps", "-4"}), "Value -4 is not a finite number > 0"},
      {tune({"--band-factor", "1e999"}), "Value 1e999 is not"},
      {tune({"--memory-budget", "fast=1e400GiB"}), "1e400GiB"},
  };
  for (const auto& [args, message] : cases) {
    expect_refused(args, message);
    auto r = test::run_speedgate(args, dir, {{"FAKE_MANIFEST", "small"}});
    int run = 0, longest = 0;
    for (char c : r.err)
      longest = std::max(longest, run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0);
    EXPECT_LT(longest, 20) << r.err;
  }
}

TEST_F(BadInputTest, PresetsProjectRefusesACampaignThatDoesNotExist) {
  { Store create(dir + "/sg.db"); }  // an empty, current-schema database
  expect_refused({"presets", "project", "--db", "sg.db", "--campaign", "0", "--preset", "fast"},
                 "--campaign");
  expect_refused({"presets", "project", "--db", "sg.db", "--campaign", "-3", "--preset", "fast"},
                 "--campaign");
  expect_refused({"presets", "project", "--db", "sg.db", "--campaign", "7", "--preset", "fast"},
                 "no campaign 7");
}

TEST_F(BadInputTest, AFileThatIsNotADatabaseIsNeverTouched) {
  write("garbage.db", std::string("this is not SQLite\0\xff\xfe", 22) + std::string(5000, 'x'));
  expect_refused({"report", "--db", "garbage.db"}, "garbage.db");
  expect_refused({"presets", "emit", "--db", "garbage.db", "--out", "p"}, "garbage.db");
  expect_refused({"tune", "--workload", "wam", "--size", "tiny", "--db", "garbage.db", "--trainer",
                  test::fake_trainer(), "--budget-trials", "3"},
                 "garbage.db");
  expect_refused({"serve", "--db", "garbage.db", "--listen", "127.0.0.1:0"}, "garbage.db");
}

TEST_F(BadInputTest, BadManifestsAreRefusedByField) {
  write("garbage_trainer.sh", "#!/bin/sh\necho 'not json {'\n", true);
  expect_refused(tune({}, dir + "/garbage_trainer.sh"), "manifest: not valid JSON");
  write("preload_trainer.sh",
        "#!/bin/sh\ncat <<'EOF'\n{\"protocol\": 1, \"workloads\": [{\"name\": \"wam\", \"sizes\": "
        "[{\"name\": \"tiny\"}]}],\n"
        " \"switches\": [{\"name\": \"X\", \"env\": \"LD_PRELOAD\", \"type\": \"bool\", "
        "\"values\": [\"0\",\"1\"],\n"
        " \"default\": \"0\", \"identity\": \"bitwise\", \"effect\": \"speed\"}]}\nEOF\n",
        true);
  expect_refused(tune({}, dir + "/preload_trainer.sh"), "switches[0].env");
  write("failing_trainer.sh", "#!/bin/sh\necho oops >&2\nexit 7\n", true);
  expect_refused(tune({}, dir + "/failing_trainer.sh"), "failing_trainer.sh");
  write("not_executable.sh", "#!/bin/sh\nexit 0\n");
  expect_refused(tune({}, dir + "/not_executable.sh"), "not executable");
}

TEST_F(BadInputTest, BadPresetsNameTheLineAndTheProblem) {
  const std::map<std::string, std::pair<std::string, std::string>> presets = {
      {"unknown.env", {"SG_TEXT_CACHE=1\nSG_NOPE=1\n", "line 2: unknown switch SG_NOPE"}},
      {"duplicate.env", {"SG_TEXT_CACHE=1\nSG_TEXT_CACHE=1\n", "duplicate switch SG_TEXT_CACHE"}},
      {"value.env", {"SG_CKPT_LAYERS=99\n", "outside its domain"}},
      {"dollar.env", {"SG_TEXT_CACHE=$X\n", "line 1"}},
      {"quotes.env", {"SG_TEXT_CACHE=\"1\"\n", "line 1"}},
      {"space.env", {"SG_TEXT_CACHE=1 \n", "line 1"}},
      {"preload.env", {"LD_PRELOAD=/tmp/x.so\n", "LD_PRELOAD"}},
      {"nul.env", {std::string("SG_TEXT_CACHE=1\0\n", 17), "NUL"}},
      {"latin1.env", {"# caf\xe9\nSG_TEXT_CACHE=1\n", "UTF-8"}},
      {"long_line.env", {"SG_TEXT_CACHE=" + std::string(1 << 20, '1') + "\n", "larger than"}},
      {"long_comment.env", {"#" + std::string(8000, 'c') + "\nSG_TEXT_CACHE=1\n", "longer than"}},
  };
  for (const auto& [name, preset] : presets) write(name, preset.first);
  for (const auto& [name, preset] : presets) {
    expect_refused({"presets", "check", name, "--trainer", test::fake_trainer()}, preset.second);
  }
}

}  // namespace
}  // namespace sg::agent
