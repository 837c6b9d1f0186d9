// Gradient accumulation must average micro-batches: GAS 4 x micro 2 and GAS 1 x micro 8
// on the same samples give the same gradient norm (within rounding), and the injected
// sum-instead-of-mean fault (SPEEDGATE_TEST_FAULT=grad_accum_sum) is caught by the check.
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

namespace sg::trainer::testing {
namespace {

double step0_grad_norm(const TrainerRun& r) {
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return r.result.at("step_records").at(0).at("grad_norm").get<double>();
}

double step0_loss(const TrainerRun& r) {
  return r.result.at("step_records").at(0).at("loss").get<double>();
}

bool ratio_ok(double ratio) { return ratio >= 0.99 && ratio <= 1.01; }

TEST(GradAccum, AveragesMicroBatches) {
  const auto accum = run_trainer(tiny_run(/*steps=*/1, /*micro=*/2, /*accum=*/4));
  const auto whole = run_trainer(tiny_run(/*steps=*/1, /*micro=*/8, /*accum=*/1));
  const double ratio = step0_grad_norm(accum) / step0_grad_norm(whole);
  EXPECT_TRUE(ratio_ok(ratio)) << "grad-norm ratio " << ratio;
  EXPECT_NEAR(step0_loss(accum) / step0_loss(whole), 1.0, 1e-3) << "logged loss must be unscaled";
}

TEST(GradAccum, SumFaultIsCaught) {
  const auto faulty = run_trainer(tiny_run(1, 2, 4), {{"SPEEDGATE_TEST_FAULT", "grad_accum_sum"}});
  const auto whole = run_trainer(tiny_run(1, 8, 1));
  const double ratio = step0_grad_norm(faulty) / step0_grad_norm(whole);
  EXPECT_FALSE(ratio_ok(ratio)) << "grad-norm ratio " << ratio;
  EXPECT_NEAR(ratio, 4.0, 0.1);
}

}  // namespace
}  // namespace sg::trainer::testing
