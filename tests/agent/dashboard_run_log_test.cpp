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

class DashboardRunLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::make_temp_dir("runlog");
    fs::create_directories(dir_ + "/runs/c1/t5");
    std::ofstream(dir_ + "/runs/c1/t5/stderr.log") << "the log\n";
    std::ofstream(dir_ + "/secret") << "root:secret\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  LogLocation at(const std::string& file, std::int64_t run = 5) {
    return {dir_ + "/runs", 1, run, file};
  }
  std::string dir_;
};

TEST_F(DashboardRunLog, ReadsARegularFileAndItsTail) {
  EXPECT_EQ(read_log_tail(at("stderr.log"), 1 << 20).value_or("?"), "the log\n");
  EXPECT_EQ(read_log_tail(at("stderr.log"), 4).value_or("?"), "log\n");
}

TEST_F(DashboardRunLog, RefusesLinksFifosAndHardLinks) {
  fs::create_symlink(dir_ + "/secret", dir_ + "/runs/c1/t5/stdout.log");
  EXPECT_FALSE(read_log_tail(at("stdout.log"), 1 << 20));
  ASSERT_EQ(::mkfifo((dir_ + "/runs/c1/t5/fifo.log").c_str(), 0600), 0);
  EXPECT_FALSE(read_log_tail(at("fifo.log"), 1 << 20));  // and does not wait for a writer
  fs::create_hard_link(dir_ + "/secret", dir_ + "/runs/c1/t5/hard.log");
  EXPECT_FALSE(read_log_tail(at("hard.log"), 1 << 20));
  fs::create_directory(dir_ + "/runs/c1/t5/sub.log");
  EXPECT_FALSE(read_log_tail(at("sub.log"), 1 << 20));
  // A run directory, or the campaign's, replaced by a link to elsewhere.
  fs::create_directories(dir_ + "/elsewhere");
  std::ofstream(dir_ + "/elsewhere/stderr.log") << "not a run\n";
  fs::create_directory_symlink(dir_ + "/elsewhere", dir_ + "/runs/c1/t6");
  EXPECT_FALSE(read_log_tail(at("stderr.log", 6), 1 << 20));
  fs::create_directory_symlink(dir_ + "/runs/c1", dir_ + "/runs/c2");
  EXPECT_FALSE(read_log_tail({dir_ + "/runs", 2, 5, "stderr.log"}, 1 << 20));
  EXPECT_FALSE(read_log_tail(at("../t5/stderr.log"), 1 << 20));
}

TEST_F(DashboardRunLog, LocationsComeFromTheRunLayoutAndTheDbDirectory) {
  // Stored relative to the controller's directory: found beside the DB from anywhere.
  const auto rel = log_locations(dir_ + "/speedgate.db", "results/runs/c1/t5/stderr.log");
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[0].root, dir_ + "/results/runs");
  EXPECT_EQ(rel[1].root, dir_ + "/runs");
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
    EXPECT_TRUE(log_locations(dir_ + "/sg.db", bad).empty()) << bad;
  }
}

}  // namespace
}  // namespace sg::agent::dashboard
