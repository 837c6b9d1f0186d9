// Distributed data-parallel training on the CPU: two real speedgate-train processes with
// Gloo on loopback (a free port), wam tiny.
//   - 2 ranks x micro 1 equals 1 rank x micro 2 on the same samples within the seed band
//     (measured here the way the controller's gate does: seed 1000 against seed 0);
//   - OVERLAP_COMM, ZERO1 and BUCKET_MB (at 2 ranks) are bitwise against their defaults;
//   - rank 1 aborting (SPEEDGATE_TEST_FAULT=rank_crash) makes both ranks exit non-zero
//     without hanging; a bad launch environment is exit 2.
#include "distributed_harness.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sg::trainer::testing {
namespace {

constexpr int kSteps = 4;
constexpr double kBandFactor = 2.0;  // the controller's default --band-factor

std::string run_args(int micro, int seed = 0, int accum = 1) {
  return "run --workload wam --size tiny --steps " + std::to_string(kSteps) + " --seed " +
         std::to_string(seed) + " --micro-batch " + std::to_string(micro) + " --grad-accum " +
         std::to_string(accum) + " --threads 1 --warmup-steps 1 --eval-batches 1";
}

std::vector<double> series(const nlohmann::json& r, const char* key) {
  std::vector<double> out;
  for (const auto& s : r.at("step_records")) out.push_back(s.at(key).get<double>());
  return out;
}

// The controller gate's three deviations (docs/controller.md, "Band").
struct Deviation {
  double curve_rms = 0, eval = 0, grad_norm_log = 0;
};

Deviation deviation(const nlohmann::json& a, const nlohmann::json& b) {
  const auto la = series(a, "loss"), lb = series(b, "loss");
  const auto ga = series(a, "grad_norm"), gb = series(b, "grad_norm");
  Deviation d;
  double mean_ga = 0, mean_gb = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    d.curve_rms += (la[i] - lb[i]) * (la[i] - lb[i]);
    mean_ga += ga[i] / ga.size();
    mean_gb += gb[i] / gb.size();
  }
  d.curve_rms = std::sqrt(d.curve_rms / la.size());
  d.eval = std::fabs(a.at("eval_loss").get<double>() - b.at("eval_loss").get<double>());
  d.grad_norm_log = std::fabs(std::log(mean_ga / mean_gb));
  return d;
}

void expect_ok(const RanksRun& run) {
  for (size_t r = 0; r < run.exit_codes.size(); ++r) {
    ASSERT_EQ(run.exit_codes[r], 0) << "rank " << r << ":\n" << run.stderr_texts[r];
  }
  ASSERT_TRUE(run.result.is_object());
  EXPECT_EQ(run.result.at("status"), "ok");
}

// The 2-rank run the bitwise tests compare against: one bucket per parameter (BUCKET_MB=0;
// tiny's gradients are under 1 MiB, so any other size is a single bucket) and two
// micro-batches, so overlap has many buckets to start during the second backward.
const RanksRun& two_rank_default() {
  static const RanksRun run =
      run_ranks(2, run_args(/*micro=*/1, /*seed=*/0, /*accum=*/2), {{"SG_BUCKET_MB", "0"}});
  return run;
}

TEST(Distributed, TwoRanksReportPerRankAndOnlyRankZeroWrites) {
  const auto& run = two_rank_default();
  expect_ok(run);
  const auto& r = run.result;
  EXPECT_EQ(r.at("world_size"), 2);
  EXPECT_EQ(r.at("zero_stage"), 0);
  EXPECT_EQ(r.at("fingerprint").at("dist_backend"), "gloo");
  ASSERT_EQ(r.at("rank_param_digests").size(), 2u);
  // Data parallel: every rank ends with the same parameters.
  EXPECT_EQ(r["rank_param_digests"][0], r["rank_param_digests"][1]);
  EXPECT_EQ(r["rank_param_digests"][0], r["param_digest"]);
  EXPECT_EQ(r.at("memory").at("peak_allocated_bytes").size(), 2u);
  EXPECT_EQ(r.at("memory").at("peak_reserved_bytes").size(), 2u);
  EXPECT_TRUE(run.wrote_result[0]);
  EXPECT_FALSE(run.wrote_result[1]) << "only rank 0 writes the result file";
}

TEST(Distributed, TwoRanksMatchOneRankOnTheGlobalBatchWithinSeedBand) {
  const auto two = run_ranks(2, run_args(/*micro=*/1));
  expect_ok(two);
  const auto one = run_trainer(run_args(/*micro=*/2));
  const auto other_seed = run_trainer(run_args(/*micro=*/2, /*seed=*/1000));
  ASSERT_EQ(one.exit_code, 0) << one.stderr_text;
  ASSERT_EQ(other_seed.exit_code, 0) << other_seed.stderr_text;
  // Step 0 precedes any update: the same samples give the same loss and gradient up to
  // rounding (a wrong split or a missing average would be off by far more).
  const double l2 = series(two.result, "loss")[0], l1 = series(one.result, "loss")[0];
  const double g2 = series(two.result, "grad_norm")[0], g1 = series(one.result, "grad_norm")[0];
  EXPECT_NEAR(l2 / l1, 1.0, 1e-5) << l2 << " vs " << l1;
  EXPECT_NEAR(g2 / g1, 1.0, 1e-4) << g2 << " vs " << g1;
  const Deviation band = deviation(other_seed.result, one.result);
  const Deviation dev = deviation(two.result, one.result);
  EXPECT_LE(dev.curve_rms, kBandFactor * band.curve_rms) << "band " << band.curve_rms;
  EXPECT_LE(dev.eval, kBandFactor * band.eval) << "band " << band.eval;
  EXPECT_LE(dev.grad_norm_log, kBandFactor * band.grad_norm_log) << "band " << band.grad_norm_log;
  EXPECT_GT(band.curve_rms, 0.0) << "the seed band must be a real spread";
}

TEST(Distributed, OverlapCommIsBitwise) {
  expect_ok(two_rank_default());
  const auto overlap =
      run_ranks(2, run_args(1, 0, /*accum=*/2), {{"SG_BUCKET_MB", "0"}, {"SG_OVERLAP_COMM", "1"}});
  expect_ok(overlap);
  expect_bitwise_ranks(two_rank_default().result, overlap.result);
  // The overlap really happened: buckets started from backward hooks, none without.
  const auto& stats = overlap.result.at("extra").at("gradient_buckets");
  EXPECT_GT(stats.at("buckets").get<int>(), 1);
  EXPECT_GT(stats.at("started_in_backward").get<int>(), 0);
  EXPECT_EQ(two_rank_default().result.at("extra").at("gradient_buckets").at("started_in_backward"),
            0);
}

TEST(Distributed, Zero1IsBitwiseAndShardsOptimizerState) {
  expect_ok(two_rank_default());
  const auto zero = run_ranks(2, run_args(1, 0, 2), {{"SG_BUCKET_MB", "0"}, {"SG_ZERO1", "1"}});
  expect_ok(zero);
  expect_bitwise_ranks(two_rank_default().result, zero.result);
  EXPECT_EQ(zero.result.at("zero_stage"), 1);
  const auto optimizer_bytes = [](const nlohmann::json& r) {
    return r.at("memory").at("breakdown").at("optimizer").get<int64_t>();
  };
  EXPECT_LT(optimizer_bytes(zero.result), optimizer_bytes(two_rank_default().result));
}

TEST(Distributed, BucketSizeIsBitwiseAtTwoRanks) {
  expect_ok(two_rank_default());
  const auto big = run_ranks(2, run_args(1, 0, 2), {{"SG_BUCKET_MB", "25"}});
  expect_ok(big);
  expect_bitwise_ranks(two_rank_default().result, big.result);
}

TEST(Distributed, DeadRankFailsTheOtherPromptly) {
  // A 60 s collective timeout; Gloo sees the closed connection long before. Each rank
  // runs under a 300 s kill bound: a hang shows as 137, not as a hung test.
  const auto run = run_ranks(
      2, run_args(1), {{"SPEEDGATE_TEST_FAULT", "rank_crash"}, {"SPEEDGATE_DIST_TIMEOUT_S", "60"}},
      /*bound_s=*/300);
  EXPECT_EQ(run.exit_codes[1], 128 + SIGABRT) << run.stderr_texts[1];
  EXPECT_EQ(run.exit_codes[0], 1) << run.stderr_texts[0];
  EXPECT_NE(run.stderr_texts[0].find("rank 0: error"), std::string::npos) << run.stderr_texts[0];
  ASSERT_TRUE(run.result.is_object());
  EXPECT_EQ(run.result.at("status"), "error");
}

TEST(Distributed, MissingMasterAddressIsBadInput) {
  const auto r =
      run_trainer(run_args(1), {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("MASTER_ADDR"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace sg::trainer::testing
