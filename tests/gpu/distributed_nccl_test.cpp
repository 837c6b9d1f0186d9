// Two-rank data parallel on two GPUs with NCCL (label gpu; built only with
// SPEEDGATE_WITH_CUDA; skipped unless 2 GPUs are visible): OVERLAP_COMM and ZERO1 are
// bitwise against the non-overlapped, unsharded run at the same world size, and both
// ranks end with the same parameters.
#include "trainer/distributed_harness.hpp"

#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace sg::trainer::testing {
namespace {

std::string small_run() {
  return "run --workload wam --size small --steps 4 --seed 0 --micro-batch 2 --grad-accum 2 "
         "--warmup-steps 1 --eval-batches 1";
}

void expect_ok(const RanksRun& run) {
  for (size_t r = 0; r < run.exit_codes.size(); ++r) {
    ASSERT_EQ(run.exit_codes[r], 0) << "rank " << r << ":\n" << run.stderr_texts[r];
  }
  ASSERT_TRUE(run.result.is_object());
  EXPECT_EQ(run.result.at("fingerprint").at("dist_backend"), "nccl");
  ASSERT_EQ(run.result.at("rank_param_digests").size(), 2u);
  EXPECT_EQ(run.result["rank_param_digests"][0], run.result["rank_param_digests"][1]);
}

class DistributedNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (torch::cuda::device_count() < 2) GTEST_SKIP() << "needs 2 visible GPUs";
  }
  static const RanksRun& plain() {
    static const RanksRun run = run_ranks(2, small_run(), {{"SG_BUCKET_MB", "4"}});
    return run;
  }
};

TEST_F(DistributedNccl, OverlapCommIsBitwise) {
  expect_ok(plain());
  const auto overlap = run_ranks(2, small_run(), {{"SG_BUCKET_MB", "4"}, {"SG_OVERLAP_COMM", "1"}});
  expect_ok(overlap);
  expect_bitwise_ranks(plain().result, overlap.result);
}

TEST_F(DistributedNccl, Zero1IsBitwise) {
  expect_ok(plain());
  const auto zero = run_ranks(2, small_run(), {{"SG_BUCKET_MB", "4"}, {"SG_ZERO1", "1"}});
  expect_ok(zero);
  expect_bitwise_ranks(plain().result, zero.result);
  EXPECT_EQ(zero.result.at("zero_stage"), 1);
}

}  // namespace
}  // namespace sg::trainer::testing
