// StepStats: immediate values come back in the step that made them, lagged ones one step
// later, with the same bits, and flush returns what is left.
#include "trainer/runtime/step_stats.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace sg::trainer {
namespace {

at::Tensor scalar(float v) { return at::full({}, v, at::kFloat); }

void run_step(StepStats& s, int64_t step, float l1, float l2, float norm) {
  s.begin_step(step);
  s.add_loss(scalar(l1));
  s.add_loss(scalar(l2));
  s.set_grad_norm(scalar(norm));
}

TEST(StepStats, ImmediateReturnsTheCurrentStepOnce) {
  StepStats s(c10::Device(c10::kCPU), /*lagged=*/false);
  run_step(s, 0, 0.1f, 0.2f, 3.0f);
  const auto r = s.ready();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, 0);
  EXPECT_EQ(r[0].loss_sum, 0.0f + 0.1f + 0.2f);
  EXPECT_EQ(r[0].grad_norm, 3.0f);
  EXPECT_TRUE(s.ready().empty());
  s.end_step();
  EXPECT_TRUE(s.flush().empty());
}

TEST(StepStats, LaggedReturnsEachStepOneStepLater) {
  StepStats s(c10::Device(c10::kCPU), /*lagged=*/true);
  run_step(s, 0, 0.1f, 0.2f, 3.0f);
  EXPECT_TRUE(s.ready().empty());
  s.end_step();
  run_step(s, 1, 0.4f, 0.5f, 6.0f);
  auto r = s.ready();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, 0);
  EXPECT_EQ(r[0].loss_sum, 0.0f + 0.1f + 0.2f);
  EXPECT_EQ(r[0].grad_norm, 3.0f);
  s.end_step();
  r = s.flush();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].step, 1);
  EXPECT_EQ(r[0].loss_sum, 0.0f + 0.4f + 0.5f);
  EXPECT_TRUE(s.flush().empty());
}

}  // namespace
}  // namespace sg::trainer
