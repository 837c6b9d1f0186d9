// SPEEDGATE_PROFILE_OPS (trainer/runtime/op_profile.hpp): the op summary's aggregation,
// and end to end through the binary that profiling writes an op table without changing
// what is computed, and that a PATH it cannot write is exit 2 before training.
#include "trainer/runtime/op_profile.hpp"
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

#include <dirent.h>

#include <set>

namespace sg::trainer::testing {
namespace {

const nlohmann::json* find_op(const nlohmann::json& ops, const std::string& kind,
                              const std::string& name) {
  for (const auto& op : ops) {
    if (op.at("kind") == kind && op.at("name") == name) return &op;
  }
  return nullptr;
}

// Self time subtracts the ops nested on the same thread only; device activity comes first,
// by total time; each group's percent is of its own total.
TEST(OpProfile, SummaryNestsCpuOpsPerThreadAndSortsDeviceActivityFirst) {
  const std::vector<OpEvent> events = {
      {"aten::linear", "cpu_op", 1, 0, 10000},     // [0, 10us) on thread 1
      {"aten::t", "cpu_op", 1, 1000, 1000},        // inside linear
      {"aten::addmm", "cpu_op", 1, 3000, 6000},    // inside linear
      {"aten::addmm", "cpu_op", 2, 2000, 4000},    // thread 2: not inside linear
      {"gemm_kernel", "cuda_kernel", 0, 0, 7000},  //
      {"gemm_kernel", "cuda_kernel", 0, 9000, 5000}, {"Memcpy HtoD", "cuda_memcpy", 0, 20000, 3000},
  };
  const auto s = summarize_op_events(events, 60);
  EXPECT_DOUBLE_EQ(s.at("device_us").get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(s.at("cpu_self_us").get<double>(), 3.0 + 1.0 + 10.0);
  const auto& ops = s.at("ops");
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].at("name"), "gemm_kernel");
  EXPECT_EQ(ops[0].at("calls"), 2);
  EXPECT_DOUBLE_EQ(ops[0].at("total_us").get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(ops[0].at("avg_us").get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(ops[0].at("percent").get<double>(), 80.0);
  EXPECT_EQ(ops[1].at("kind"), "cuda_memcpy");
  EXPECT_EQ(ops[2].at("name"), "aten::addmm");  // CPU ops by self time: addmm 10, linear 3, t 1
  EXPECT_DOUBLE_EQ(ops[2].at("self_us").get<double>(), 10.0);
  const auto* linear = find_op(ops, "cpu_op", "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_DOUBLE_EQ(linear->at("total_us").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(linear->at("self_us").get<double>(), 3.0);
  EXPECT_EQ(ops[4].at("name"), "aten::t");
}

// A device row says which CPU ops launched it (Kineto's linked correlation id): the
// launching op and the two around it, outermost first, behind the autograd node further
// out, with the launching op's inputs; paths ordered by device time.
TEST(OpProfile, DeviceRowsNameTheOpsThatLaunchedThem) {
  const std::string node = "autograd::engine::evaluate_function: AddBackward0";
  const std::vector<OpEvent> events = {
      {node, "cpu_op", 1, 0, 100000, 1},
      {"AddBackward0", "cpu_op", 1, 1000, 90000, 2},
      {"aten::to", "cpu_op", 1, 2000, 50000, 3, "f32[4,8]"},
      {"aten::_to_copy", "cpu_op", 1, 3000, 40000, 4},
      {"aten::copy_", "cpu_op", 1, 4000, 30000, 5, "bf16[4,8], f32[4,8]"},
      {"aten::add", "cpu_op", 1, 200000, 10000, 6, "f32[4,8], bf16[4,8]"},
      {"aten::add", "cpu_op", 2, 300000, 10000, 7, "f32[4,8], bf16[4,8]"},
      {"elementwise_kernel", "cuda_kernel", 0, 5000, 7000, 5},
      {"elementwise_kernel", "cuda_kernel", 0, 205000, 4000, 6},
      {"elementwise_kernel", "cuda_kernel", 0, 305000, 4000, 7},
      {"elementwise_kernel", "cuda_kernel", 0, 405000, 9000, 99},  // its op was not recorded
      {"gemm", "cuda_kernel", 0, 500000, 1000, 0},
  };
  const auto ops = summarize_op_events(events, 60).at("ops");
  const auto* k = find_op(ops, "cuda_kernel", "elementwise_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->at("calls"), 4);
  const auto& from = k->at("from");
  ASSERT_EQ(from.size(), 2u);
  EXPECT_EQ(from[0].at("path"), "aten::add [f32[4,8], bf16[4,8]]");  // two launches, 8 us
  EXPECT_EQ(from[0].at("calls"), 2);
  EXPECT_DOUBLE_EQ(from[0].at("total_us").get<double>(), 8.0);
  EXPECT_EQ(from[1].at("path"),
            node + " > ... > aten::to > aten::_to_copy > aten::copy_ [bf16[4,8], f32[4,8]]");
  EXPECT_EQ(from[1].at("calls"), 1);
  const auto* gemm = find_op(ops, "cuda_kernel", "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_FALSE(gemm->contains("from"));
  EXPECT_FALSE(find_op(ops, "cpu_op", "aten::add")->contains("from"));
}

// LibTorch 1.13 times ops in whole microseconds: a wrapper and the op it calls often share
// start and duration. The correlation ids (given as ops are entered) keep the nesting.
TEST(OpProfile, OpsWithTheSameTimesNestInTheOrderTheyWereEntered) {
  const std::vector<OpEvent> events = {
      {"aten::copy_", "cpu_op", 1, 0, 1000, 12},
      {"aten::to", "cpu_op", 1, 0, 1000, 10},
      {"aten::_to_copy", "cpu_op", 1, 0, 1000, 11},
      {"copy_kernel", "cuda_kernel", 0, 500, 2000, 12},
  };
  const auto ops = summarize_op_events(events, 60).at("ops");
  const auto* k = find_op(ops, "cuda_kernel", "copy_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->at("from").at(0).at("path"), "aten::to > aten::_to_copy > aten::copy_");
  EXPECT_DOUBLE_EQ(find_op(ops, "cpu_op", "aten::to")->at("self_us").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(find_op(ops, "cpu_op", "aten::copy_")->at("self_us").get<double>(), 1.0);
}

TEST(OpProfile, SummaryFoldsRowsPastTopIntoOther) {
  std::vector<OpEvent> events;
  for (int i = 0; i < 5; ++i)
    events.push_back({"k" + std::to_string(i), "cuda_kernel", 0, i * 100000, 1000 * (i + 1)});
  const auto ops = summarize_op_events(events, 2).at("ops");
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].at("name"), "k4");
  EXPECT_EQ(ops[1].at("name"), "k3");
  EXPECT_EQ(ops[2].at("name"), "(other)");
  EXPECT_EQ(ops[2].at("calls"), 3);
  EXPECT_DOUBLE_EQ(ops[2].at("total_us").get<double>(), 6.0);
}

// The profiler only observes: the same bits as an unprofiled run, and the file lists the
// model's matrix products among the CPU ops of the steady-state steps.
// CPU builds: the op names and kinds below are the CPU's (a CUDA build runs on the GPU).
#if !SPEEDGATE_WITH_CUDA
TEST(OpProfile, TinyWamRunWritesOpsWithoutChangingResults) {
  const std::string dir = temp_dir() + "/op_profile";
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/ops.json";
  const auto profiled = run_trainer(tiny_run(), {{"SPEEDGATE_PROFILE_OPS", path}});
  ASSERT_EQ(profiled.exit_code, 0) << profiled.stderr_text;
  const auto baseline = cached_run_trainer(tiny_run());
  ASSERT_EQ(baseline.exit_code, 0);
  expect_bitwise_equal(baseline.result, profiled.result);

  const std::string text = read_file(path);
  ASSERT_FALSE(text.empty()) << path;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("steps"), profiled.result.at("steady_state_steps"));
  EXPECT_EQ(j.at("device"), "cpu");
  EXPECT_GT(j.at("total_us").get<double>(), 0.0);
  const auto& ops = j.at("ops");
  ASSERT_FALSE(ops.empty());
  bool matmul = false;
  for (const auto& op : ops) {
    EXPECT_EQ(op.at("kind"), "cpu_op") << op.dump();  // no device activity on the CPU
    static const std::set<std::string> kMatmuls = {"aten::addmm",  "aten::mm",     "aten::bmm",
                                                   "aten::matmul", "aten::linear", "aten::baddbmm"};
    if (kMatmuls.count(op.at("name").get<std::string>()) != 0 &&
        op.at("calls").get<int64_t>() > 0 && op.at("total_us").get<double>() > 0.0) {
      matmul = true;
    }
  }
  EXPECT_TRUE(matmul) << j.dump(1);
  // Written atomically: nothing but the file itself is left next to it.
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
  }
  ::closedir(d);
  EXPECT_EQ(names, std::vector<std::string>{"ops.json"});
}
#endif

TEST(OpProfile, UnwritablePathIsExit2NamingTheVariable) {
  for (const std::string& path : {std::string("/nonexistent_sg_dir/ops.json"), temp_dir()}) {
    const auto run = run_trainer(tiny_run(), {{"SPEEDGATE_PROFILE_OPS", path}});
    EXPECT_EQ(run.exit_code, 2) << path << "\n" << run.stderr_text;
    EXPECT_NE(run.stderr_text.find("SPEEDGATE_PROFILE_OPS=" + path), std::string::npos)
        << run.stderr_text;
    EXPECT_TRUE(run.result.is_null() || run.result.at("step_records").empty())
        << "training started";
  }
}

}  // namespace
}  // namespace sg::trainer::testing
