// Issue 31, item 9 (the controller's loose ends; the trainer's are in
// preset_parity_test.cpp): stale temporaries of a killed writer are removed by the next
// write, a failed rename leaves no temporary, read-only commands leave no -wal/-shm
// beside the database, and range errors print large numbers compactly.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

using LooseEnds = test::TempDirTest;

TEST_F(LooseEnds, TheNextWriteRemovesTempsThatKilledWritersLeft) {
  // A presets emit killed mid-write leaves `.fast.env.tmp.<pid>.XXXXXX`; pid 999999999
  // cannot exist (pid_max is at most 2^22), pid 1 always does.
  write_file_atomic(dir + "/.fast.env.tmp.999999999.abcdef", "half");
  write_file_atomic(dir + "/.fast.env.tmp.1.abcdef", "a live writer's");
  write_file_atomic(dir + "/.other.env.tmp.999999999.abcdef", "another file's");
  write_file_atomic(dir + "/fast.env", "SG_A=1\n");
  EXPECT_FALSE(fs::exists(dir + "/.fast.env.tmp.999999999.abcdef"))
      << "a dead writer's temp survived";
  EXPECT_TRUE(fs::exists(dir + "/.fast.env.tmp.1.abcdef")) << "a live writer's temp was removed";
  EXPECT_TRUE(fs::exists(dir + "/.other.env.tmp.999999999.abcdef"))
      << "another target's temp was removed";
  EXPECT_EQ(read_file(dir + "/fast.env").value_or(""), "SG_A=1\n");
}

TEST_F(LooseEnds, AFailedRenameLeavesNoTemp) {
  fs::create_directories(dir + "/fast.env/occupied");
  EXPECT_THROW(write_file_atomic(dir + "/fast.env", "SG_A=1\n"), std::runtime_error);
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(LooseEnds, ReadOnlyCommandsLeaveNoWalOrShmBesideTheDatabase) {
  { Store create(dir + "/sg.db"); }
  ASSERT_FALSE(fs::exists(dir + "/sg.db-wal"));
  auto r = test::run_speedgate({"report", "--db", "sg.db"}, dir);
  EXPECT_FALSE(fs::exists(dir + "/sg.db-wal")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/sg.db-shm")) << r.err;
  r = test::run_speedgate({"presets", "project", "--db", "sg.db", "--preset", "fast"}, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/sg.db-wal")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/sg.db-shm")) << r.err;
}

}  // namespace
}  // namespace sg::agent
