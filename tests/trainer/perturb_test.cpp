// `run --perturb EPS` (protocol §2, trainer/runtime/perturb.hpp): 0 is bitwise the run
// without the flag; 2^-8 moves training a little and the same way every time; the
// manifest declares the capability; values outside [0, 1) are usage errors.
#include "trainer/runtime/perturb.hpp"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/manifest.hpp"
#include "trainer_harness.hpp"

namespace sg::trainer {
namespace {

TEST(Perturb, EveryElementMovesByExactlyEpsWithSeededSigns) {
  torch::manual_seed(3);
  const at::Tensor w = torch::randn({64, 32}, torch::kFloat64);
  auto copy = [&] { return std::vector<std::pair<std::string, at::Tensor>>{{"w", w.clone()}}; };
  auto a = copy(), b = copy(), c = copy(), z = copy();
  perturb_parameters(a, 0.25, 7);
  perturb_parameters(b, 0.25, 7);
  perturb_parameters(c, 0.25, 8);
  perturb_parameters(z, 0.0, 7);
  EXPECT_TRUE(torch::equal(z[0].second, w)) << "eps 0 changes nothing";
  EXPECT_TRUE(torch::equal(a[0].second, b[0].second)) << "same seed, same signs";
  EXPECT_FALSE(torch::equal(a[0].second, c[0].second)) << "another seed, other signs";
  const at::Tensor ratio = (a[0].second / w - 1).abs();
  EXPECT_NEAR(ratio.min().item<double>(), 0.25, 1e-12);
  EXPECT_NEAR(ratio.max().item<double>(), 0.25, 1e-12);
  const double up = ((a[0].second / w - 1) > 0).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(up, 0.35);  // both signs drawn (2048 elements)
  EXPECT_LT(up, 0.65);
}

TEST(Perturb, ZeroIsBitwiseAndEpsMovesTrainingALittle) {
  const std::string base = testing::tiny_run(3);
  const auto plain = testing::cached_run_trainer(base);
  const auto zero = testing::run_trainer(base + " --perturb 0");
  const auto moved = testing::run_trainer(base + " --perturb 0.00390625");
  ASSERT_EQ(plain.exit_code, 0);
  ASSERT_EQ(zero.exit_code, 0) << zero.stderr_text;
  ASSERT_EQ(moved.exit_code, 0) << moved.stderr_text;
  testing::expect_bitwise_equal(plain.result, zero.result);
  EXPECT_NE(plain.result["param_digest"], moved.result["param_digest"]);
  EXPECT_DOUBLE_EQ(moved.result["perturb"].get<double>(), 0.00390625);
  const double l0 = plain.result["step_records"][0]["loss"].get<double>();
  const double l1 = moved.result["step_records"][0]["loss"].get<double>();
  EXPECT_NE(l0, l1);
  EXPECT_LT(std::fabs(l0 - l1), 0.01 * std::fabs(l0)) << "a rounding-sized move, not another run";
}

TEST(Perturb, ManifestDeclaresItAndBadValuesAreUsageErrors) {
  const auto caps = build_manifest().at("capabilities");
  EXPECT_NE(std::find(caps.begin(), caps.end(), "perturb"), caps.end());
  for (const char* bad : {"-0.1", "1", "nan", "x", "inf"}) {
    const auto r = testing::run_trainer(testing::tiny_run(1) + " --perturb " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.stderr_text;
  }
}

}  // namespace
}  // namespace sg::trainer
