// Pure pieces of the distributed trainer: the launcher environment contract, the
// deterministic gradient bucket plan and the ZeRO-1 shard assignment.
#include "trainer/distributed/gradient_buckets.hpp"
#include "trainer/distributed/launch_env.hpp"
#include "trainer/distributed/sharded_adamw.hpp"
#include "trainer/errors.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>

namespace sg::trainer {
namespace {

// read_launch_env over `vars`, the environment written as "NAME=value NAME=value ...".
LaunchEnv read(const std::string& vars) {
  std::map<std::string, std::string> env;
  std::istringstream in(vars);
  for (std::string var; in >> var;) {
    const auto eq = var.find('=');
    env[var.substr(0, eq)] = var.substr(eq + 1);
  }
  return read_launch_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// Every field read() sets, to compare whole: rank, world size, local rank, master address
// and port, source and timeout.
std::tuple<int, int, int, std::string, int, std::string, int> fields(const LaunchEnv& e) {
  return {e.rank, e.world_size, e.local_rank, e.master_addr, e.master_port, e.source, e.timeout_s};
}

TEST(LaunchEnv, DefaultsToOneRank) {
  const auto e = read("");
  EXPECT_EQ(fields(e), std::make_tuple(0, 1, 0, "", 0, "none", 300));
  EXPECT_FALSE(e.distributed());
}

TEST(LaunchEnv, ReadsTorchrunVariables) {
  const auto e =
      read("RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 MASTER_ADDR=node7 MASTER_PORT=29501 SLURM_PROCID=0");
  EXPECT_EQ(fields(e), std::make_tuple(3, 4, 1, "node7", 29501, "torchrun", 300))
      << "RANK wins over SLURM_PROCID";
}

TEST(LaunchEnv, FallsBackToSlurmWithoutRank) {
  const auto e = read(
      "SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 MASTER_ADDR=a MASTER_PORT=1234 "
      "SPEEDGATE_DIST_TIMEOUT_S=30");
  EXPECT_EQ(fields(e), std::make_tuple(1, 2, 1, "a", 1234, "slurm", 30));
}

TEST(LaunchEnv, RejectsBadValuesNamingTheVariable) {
  const auto message = [](const std::string& vars) {
    try {
      read(vars);
    } catch (const BadInputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("RANK=0 WORLD_SIZE=2 MASTER_PORT=1").find("MASTER_ADDR"), std::string::npos);
  EXPECT_NE(message("RANK=0 WORLD_SIZE=2 MASTER_ADDR=a").find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(message("RANK=2 WORLD_SIZE=2").find("RANK=2"), std::string::npos);
  EXPECT_NE(message("RANK=x").find("RANK"), std::string::npos);
  EXPECT_NE(message("SLURM_PROCID=0 SLURM_NTASKS=0").find("SLURM_NTASKS"), std::string::npos);
  EXPECT_NE(message("SPEEDGATE_DIST_TIMEOUT_S=0").find("SPEEDGATE_DIST_TIMEOUT_S"),
            std::string::npos);
}

TEST(BucketPlan, PacksReverseRegistrationOrderUpToTheLimit) {
  // 5 parameters of 40, 40, 100, 30, 30 bytes, limit 64.
  const auto plan = plan_buckets({40, 40, 100, 30, 30}, {0, 0, 0, 0, 0}, 64);
  const std::vector<std::vector<size_t>> expected{{4, 3}, {2}, {1}, {0}};
  EXPECT_EQ(plan.buckets, expected) << "a parameter above the limit gets a bucket of its own";
}

TEST(BucketPlan, DtypeChangeStartsABucket) {
  const auto plan = plan_buckets({4, 4, 4}, {0, 1, 1}, 1 << 20);
  const std::vector<std::vector<size_t>> expected{{2, 1}, {0}};
  EXPECT_EQ(plan.buckets, expected);
}

TEST(BucketPlan, OneBigBucketHoldsEverything) {
  const auto plan = plan_buckets({1, 2, 3}, {0, 0, 0}, 1 << 20);
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0], (std::vector<size_t>{2, 1, 0}));
}

TEST(BucketPlan, ZeroMeansOneBucketPerParameter) {
  const auto plan = plan_buckets({1, 2, 3}, {0, 0, 0}, 0);
  const std::vector<std::vector<size_t>> expected{{2}, {1}, {0}};
  EXPECT_EQ(plan.buckets, expected);
}

TEST(ShardOwners, ContiguousBalancedRuns) {
  EXPECT_EQ(shard_owners({10, 10, 10, 10}, 2), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(shard_owners({100, 1, 1, 1}, 2), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(shard_owners({5, 5, 5}, 1), (std::vector<int>{0, 0, 0}));
  const auto owners = shard_owners({3, 1, 4, 1, 5, 9, 2, 6}, 3);
  for (size_t i = 1; i < owners.size(); ++i)
    EXPECT_LE(owners[i - 1], owners[i]) << "runs are contiguous";
  EXPECT_EQ(owners.back(), 2);
}

}  // namespace
}  // namespace sg::trainer
