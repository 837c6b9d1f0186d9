// Gradient accumulation must average micro-batches, for every workload: GAS 4 x micro 2
// and GAS 1 x micro 8 on the same samples give the same gradient norm (within rounding),
// and the injected sum-instead-of-mean fault (SPEEDGATE_TEST_FAULT=grad_accum_sum) is
// caught by the check. lm averages over the real tokens of the whole step.
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

struct AccumCase {
  const char* workload;
  double loss_tol;       // of the logged step-0 loss ratio, accumulated / whole
  double sum_ratio_tol;  // of the faulty grad-norm ratio around 4
};

class GradAccum : public ::testing::TestWithParam<AccumCase> {
 protected:
  std::string run_args(int micro, int accum) const {
    return tiny_run(/*steps=*/1, micro, accum, /*seed=*/0, GetParam().workload);
  }
};

TEST_P(GradAccum, AveragesMicroBatches) {
  const auto accum = run_trainer(run_args(/*micro=*/2, /*accum=*/4));
  const auto whole = run_trainer(run_args(/*micro=*/8, /*accum=*/1));
  const double ratio = step0_grad_norm(accum) / step0_grad_norm(whole);
  EXPECT_TRUE(ratio_ok(ratio)) << "grad-norm ratio " << ratio;
  EXPECT_NEAR(step0_loss(accum) / step0_loss(whole), 1.0, GetParam().loss_tol)
      << "logged loss must be unscaled";
}

TEST_P(GradAccum, SumFaultIsCaught) {
  const auto faulty = run_trainer(run_args(2, 4), {{"SPEEDGATE_TEST_FAULT", "grad_accum_sum"}});
  const auto whole = run_trainer(run_args(8, 1));
  const double ratio = step0_grad_norm(faulty) / step0_grad_norm(whole);
  EXPECT_FALSE(ratio_ok(ratio)) << "grad-norm ratio " << ratio;
  EXPECT_NEAR(ratio, 4.0, GetParam().sum_ratio_tol);
}

INSTANTIATE_TEST_SUITE_P(Workloads, GradAccum,
                         ::testing::Values(AccumCase{"wam", 1e-3, 0.1}, AccumCase{"lm", 1e-4, 0.4}),
                         [](const ::testing::TestParamInfo<AccumCase>& info) {
                           return std::string(info.param.workload);
                         });

}  // namespace
}  // namespace sg::trainer::testing
