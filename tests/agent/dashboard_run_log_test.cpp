// run_log.hpp: a trainer owns its run directory, so /logs reads only a regular, singly
// linked file in c<campaign>/t<run> under a runs root, never through a link (issue 31:
// a stdout.log linked to /etc/shadow was served).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "agent/dashboard/run_log.hpp"
#include "test_util.hpp"

namespace sg::agent::dashboard {
namespace {

namespace fs = std::filesystem;

// dir holds runs/c1/t5/stderr.log and, outside the runs root, a secret.
struct DashboardRunLog : test::TempDirTest {
  void SetUp() override {
    fs::create_directories(dir + "/runs/c1/t5");
    std::ofstream(dir + "/runs/c1/t5/stderr.log") << "the log\n";
    std::ofstream(dir + "/secret") << "root:secret\n";
  }
  LogLocation at(const std::string& file, std::int64_t run = 5) {
    return {dir + "/runs", 1, run, file};
  }
};

TEST_F(DashboardRunLog, ReadsARegularFileAndItsTail) {
  EXPECT_EQ(read_log_tail(at("stderr.log"), 1 << 20).value_or("?"), "the log\n");
  EXPECT_EQ(read_log_tail(at("stderr.log"), 4).value_or("?"), "log\n");
}

TEST_F(DashboardRunLog, RefusesLinksFifosAndHardLinks) {
  fs::create_symlink(dir + "/secret", dir + "/runs/c1/t5/stdout.log");
  EXPECT_FALSE(read_log_tail(at("stdout.log"), 1 << 20));
  ASSERT_EQ(::mkfifo((dir + "/runs/c1/t5/fifo.log").c_str(), 0600), 0);
  EXPECT_FALSE(read_log_tail(at("fifo.log"), 1 << 20));  // and does not wait for a writer
  fs::create_hard_link(dir + "/secret", dir + "/runs/c1/t5/hard.log");
  EXPECT_FALSE(read_log_tail(at("hard.log"), 1 << 20));
  fs::create_directory(dir + "/runs/c1/t5/sub.log");
  EXPECT_FALSE(read_log_tail(at("sub.log"), 1 << 20));
  // A run directory, or the campaign's, replaced by a link to elsewhere.
  fs::create_directories(dir + "/elsewhere");
  std::ofstream(dir + "/elsewhere/stderr.log") << "not a run\n";
  fs::create_directory_symlink(dir + "/elsewhere", dir + "/runs/c1/t6");
  EXPECT_FALSE(read_log_tail(at("stderr.log", 6), 1 << 20));
  fs::create_directory_symlink(dir + "/runs/c1", dir + "/runs/c2");
  EXPECT_FALSE(read_log_tail({dir + "/runs", 2, 5, "stderr.log"}, 1 << 20));
  EXPECT_FALSE(read_log_tail(at("../t5/stderr.log"), 1 << 20));
}

TEST_F(DashboardRunLog, LocationsComeFromTheRunLayoutAndTheDbDirectory) {
  // Stored relative to the controller's directory: found beside the DB from anywhere.
  const auto rel = log_locations(dir + "/speedgate.db", "results/runs/c1/t5/stderr.log");
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[0].root, dir + "/results/runs");
  EXPECT_EQ(rel[1].root, dir + "/runs");
  EXPECT_EQ(rel[1].campaign_id, 1);
  EXPECT_EQ(rel[1].run_id, 5);
  EXPECT_EQ(rel[1].file, "stderr.log");
  EXPECT_EQ(read_log_tail(rel[1], 1 << 20).value_or("?"), "the log\n");
  const auto abs = log_locations("sg.db", "/data/x/runs/c3/t9/stdout.log");
  ASSERT_EQ(abs.size(), 2u);
  EXPECT_EQ(abs[0].root, "/data/x/runs");
  EXPECT_EQ(abs[1].root, "./runs");
  for (const char* bad : {"/etc/shadow", "runs/c1/stderr.log", "runs/c1/tx/stderr.log", "c1/t5/..",
                          "runs/cc/t5/stderr.log", ""}) {
    EXPECT_TRUE(log_locations(dir + "/sg.db", bad).empty()) << bad;
  }
}

}  // namespace
}  // namespace sg::agent::dashboard
