// One preset parser (common/preset) for the controller and the trainer: every malformed
// preset is refused by both `speedgate presets check` and `speedgate-train run --preset`,
// each with exit 2 and the line named, and the trainer writes no result. A FIFO and
// /dev/zero are refused without being read. The trainer half is skipped when
// speedgate-train was not built (SPEEDGATE_TEST_TRAINER may point at one).
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/runner/process.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

test::CliRun run_trainer(const std::string& dir, const std::vector<std::string>& args,
                         const std::vector<std::pair<std::string, std::string>>& env = {}) {
  return test::run_exe(test::real_trainer(), args, dir, env, std::chrono::seconds(120));
}

std::vector<std::string> run_args(const std::string& dir, const std::string& preset) {
  return {"run",
          "--workload",
          "wam",
          "--size",
          "tiny",
          "--steps",
          "1",
          "--micro-batch",
          "1",
          "--threads",
          "1",
          "--result",
          dir + "/result.json",
          "--preset",
          preset};
}

struct BadPreset {
  std::string name, text;
  int line;  // 0: the whole file
  std::string why;
};

TEST(PresetParity, ControllerAndTrainerRefuseTheSameFilesNamingTheLine) {
  const std::string dir = test::make_temp_dir("presetparity");
  const std::vector<BadPreset> bad = {
      {"leading.env", "  SG_TEXT_CACHE=1\n", 1, "leading whitespace"},
      {"trailing.env", "SG_TEXT_CACHE=1 \n", 1, "trailing whitespace"},
      {"indented_comment.env", "# ok\n\t# indented\n", 2, "leading whitespace"},
      {"cr.env", "SG_TEXT_CACHE=1\r\n", 1, "contains a carriage return"},
      {"long_line.env", "# " + std::string(4096, 'c') + "\n", 1, "longer than 4096"},
      {"nul_comment.env", std::string("# a\0b\nSG_TEXT_CACHE=1\n", 20), 1, "contains a NUL byte"},
      {"overlong.env", "# \xc0\x80\n", 1, "is not valid UTF-8"},
      {"surrogate.env", "# \xed\xa0\x80\n", 1, "is not valid UTF-8"},
      {"beyond.env", "# \xf4\x90\x80\x80\n", 1, "is not valid UTF-8"},
      {"dollar.env", "\nSG_TEXT_CACHE=$X\n", 2,
       "value of SG_TEXT_CACHE has a character sh would interpret"},
      {"duplicate.env", "SG_TEXT_CACHE=1\nSG_TEXT_CACHE=1\n", 2, "duplicate switch SG_TEXT_CACHE"},
      {"export.env", "export SG_TEXT_CACHE=1\n", 1,
       "'export SG_TEXT_CACHE' is not a variable name"},
      {"big.env", std::string((1 << 20) + 1, '#'), 0, "is larger than 1048576 bytes"},
  };
  for (const auto& b : bad) write_file_atomic(dir + "/" + b.name, b.text);
  ASSERT_EQ(::mkfifo((dir + "/fifo.env").c_str(), 0600), 0);
  std::vector<BadPreset> files = bad;
  files.push_back({"fifo.env", "", 0, "is not a regular file (a FIFO)"});
  files.push_back({"/dev/zero", "", 0, "is not a regular file (a device or socket)"});
  const bool trainer_built = fs::exists(test::real_trainer());
  const std::string manifest_from = trainer_built ? test::real_trainer() : test::fake_trainer();
  for (const auto& b : files) {
    const std::string path = b.name[0] == '/' ? b.name : dir + "/" + b.name;
    // The controller says "line 2: why", the trainer "preset PATH:2: why".
    const std::string where = b.line > 0 ? "line " + std::to_string(b.line) + ": " : "";
    auto c = test::run_speedgate({"presets", "check", path, "--trainer", manifest_from}, dir,
                                 {{"FAKE_MANIFEST", "full"}});
    EXPECT_EQ(c.code, 2) << b.name << ": " << c.err;
    EXPECT_NE(c.err.find(where + b.why), std::string::npos) << b.name << ": presets check said\n"
                                                            << c.err;
    if (!trainer_built) continue;
    test::CliRun t = run_trainer(dir, run_args(dir, path));
    const std::string at =
        "preset " + path + (b.line > 0 ? ":" + std::to_string(b.line) : "") + ": ";
    EXPECT_EQ(t.code, 2) << b.name << ": " << t.err;
    EXPECT_NE(t.err.find(at + b.why), std::string::npos) << b.name << ": speedgate-train said\n"
                                                         << t.err;
    EXPECT_FALSE(fs::exists(dir + "/result.json")) << b.name << ": exit 2 wrote a result";
  }
  fs::remove_all(dir);
}

// Issue 31, item 9: the trainer's loose ends.
struct TrainerLooseEnds : test::RealTrainerTest {
  std::vector<std::string> args(const std::string& result) {
    return {"run",           "--workload", "wam",       "--size", "tiny",     "--steps", "1",
            "--micro-batch", "1",          "--threads", "1",      "--result", result};
  }
};

TEST_F(TrainerLooseEnds, AnUnknownTestFaultIsBadInputAndWritesNothing) {
  test::CliRun r =
      run_trainer(dir, args(dir + "/result.json"), {{"SPEEDGATE_TEST_FAULT", "bogus"}});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("SPEEDGATE_TEST_FAULT=bogus is not a fault"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/result.json"));
}

TEST_F(TrainerLooseEnds, BadInputFoundDuringTheRunWritesNoResult) {
  // The lm corpus is read once training has started: a missing one is exit 2.
  std::vector<std::string> a = args(dir + "/result.json");
  a[2] = "lm";
  test::CliRun r = run_trainer(dir, a, {{"SPEEDGATE_LM_CORPUS_DIR", dir + "/no-corpus"}});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no-corpus"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/result.json")) << "exit 2 wrote a result";
}

TEST_F(TrainerLooseEnds, MoreThreadsThanTheHostHasIsBadInput) {
  std::vector<std::string> a = args(dir + "/result.json");
  a[10] = "100000";
  test::CliRun r = run_trainer(dir, a);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--threads 100000 is more than"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/result.json"));
}

TEST_F(TrainerLooseEnds, AFailedRenameLeavesNoTempFile) {
  fs::create_directories(dir + "/result.json/occupied");  // rename onto a non-empty directory fails
  test::CliRun r = run_trainer(dir, args(dir + "/result.json"));
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot rename"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find("result.json.tmp."), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace sg::agent
