// The mutation suite's test-only switches (trainer/test_mutants.hpp): off, every hook is an
// exact no-op; on, every mutant and rounding switch really changes training (a dead hook
// would let tests/integration/trainer_mutation_suite_test.cpp pass a rounding switch
// vacuously) and the no-ops change no bit.
#include "trainer/test_mutants.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/switches/switches.hpp"
#include "trainer_harness.hpp"

namespace sg::trainer {
namespace {

TEST(TestMutants, OffEveryHookIsANoOp) {
  const TestMutants m = TestMutants::from(Switches{});
  const auto base = torch::optim::AdamWOptions(1e-4).weight_decay(0.01);
  const auto o = m.adamw(base);
  EXPECT_EQ(o.lr(), base.lr());
  EXPECT_EQ(o.weight_decay(), base.weight_decay());
  EXPECT_EQ(o.betas(), base.betas());
  EXPECT_EQ(m.max_grad_norm(1.0), 1.0);
  EXPECT_FALSE(m.changes_loss());
  EXPECT_FALSE(m.changes_linear());
  const std::vector<at::Tensor> params = {torch::ones({3})};
  EXPECT_TRUE(m.before_update(params, 0).empty());
}

TEST(TestMutants, WarmupScalesTheFirstStepsParameterChange) {
  Switches sw;
  sw.resolved["SG_MUT_WARMUP"] = "1";
  const TestMutants m = TestMutants::from(sw);
  for (int64_t step : {0, 1}) {
    const std::vector<at::Tensor> params = {torch::full({4}, 2.0)};
    const auto before = m.before_update(params, step);
    ASSERT_EQ(before.size(), 1u);
    params[0].add_(3.0);  // the optimizer's step
    m.after_update(params, before, step);
    EXPECT_TRUE(torch::allclose(params[0], torch::full({4}, 2.0 + 3.0 * (step + 1) / 3.0))) << step;
  }
  EXPECT_TRUE(m.before_update({torch::ones({1})}, 2).empty()) << "full rate from step 2";
}

TEST(TestMutants, EachSwitchChangesTrainingAndTheNoOpsDoNot) {
  const std::string args = testing::tiny_run(2);
  const std::map<std::string, std::string> mutants_on = {{"SPEEDGATE_TEST_MUTANTS", "1"}};
  const auto plain = testing::cached_run_trainer(args);
  ASSERT_EQ(plain.exit_code, 0);
  for (const char* name : {"NOOP_A", "NOOP_B"}) {
    auto env = mutants_on;
    env[std::string("SG_") + name] = "1";
    const auto r = testing::run_trainer(args, env);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.stderr_text;
    testing::expect_bitwise_equal(plain.result, r.result);
  }
  for (const char* name : {"MUT_LR_3", "MUT_LR_10", "MUT_WEIGHT_DECAY", "MUT_BETA2", "MUT_CLIP",
                           "MUT_WARMUP", "MUT_DROP_POSITIONS", "ROUND_BF16_OUTPUT",
                           "ROUND_BF16_LINEAR", "ROUND_F64_LINEAR", "ROUND_BF16_GRADS"}) {
    auto env = mutants_on;
    env[std::string("SG_") + name] = "1";
    const auto r = testing::run_trainer(args, env);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.stderr_text;
    EXPECT_NE(r.result.at("param_digest"), plain.result.at("param_digest")) << name;
    EXPECT_EQ(r.result.at("switches").at(std::string("SG_") + name), "1") << name;
  }
}

}  // namespace
}  // namespace sg::trainer
