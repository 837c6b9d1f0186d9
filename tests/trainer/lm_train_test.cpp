// End-to-end lm tests through the built binary: determinism, bitwise switches against
// the default, PAD_TO_8 inside a tolerance band with the same real tokens, lm_osft, a
// missing corpus and switches that do not apply to the workload (exit 2), the manifest's lm
// entries. Gradient accumulation: grad_accum_test.cpp.
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

namespace sg::trainer::testing {
namespace {

std::string lm_run(int steps = 3, int micro = 2, int accum = 1, int seed = 0,
                   const char* workload = "lm") {
  return tiny_run(steps, micro, accum, seed, workload);
}

const TrainerRun& baseline() {
  static const TrainerRun run = cached_run_trainer(lm_run());
  return run;
}

TEST(LmTrain, SameSeedTwiceIsBitwiseEqual) {
  const auto& a = baseline();
  ASSERT_NO_FATAL_FAILURE(expect_run_bitwise_equal(a, lm_run()));
  EXPECT_EQ(a.result.at("workload"), "lm");
  EXPECT_GT(a.result.at("tokens_per_s").get<double>(), 0.0);
  EXPECT_GT(a.result.at("extra").at("lm").at("real_tokens").get<int64_t>(), 0);
}

TEST(LmTrain, OtherSeedDiffers) {
  const auto b = run_trainer(lm_run(3, 2, 1, /*seed=*/1000));
  ASSERT_EQ(b.exit_code, 0) << b.stderr_text;
  EXPECT_NE(baseline().result.at("param_digest"), b.result.at("param_digest"));
}

class LmBitwiseSwitch : public ::testing::TestWithParam<EnvCase> {};

TEST_P(LmBitwiseSwitch, DigestsEqualDefault) {
  expect_run_bitwise_equal(baseline(), lm_run(), GetParam().env);
}

// Every bitwise lm switch with a CPU path (FUSED_ROPE and CUDA_GRAPHS are GPU only).
INSTANTIATE_TEST_SUITE_P(CpuPaths, LmBitwiseSwitch,
                         ::testing::Values(EnvCase{"NoCheckpoint", {{"SG_CKPT_LAYERS", "0"}}},
                                           EnvCase{"CheckpointFirstBlock",
                                                   {{"SG_CKPT_LAYERS", "1"}}}),
                         env_case_name);

TEST(LmTrain, PadTo8StaysInBandWithTheSameRealTokens) {
  const auto& base = baseline();
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const auto run = run_trainer(lm_run(), {{"SG_PAD_TO_8", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_NO_FATAL_FAILURE(
      expect_steps_close(base.result, run.result, /*loss_tol=*/1e-4, /*grad_tol=*/1e-3));
  const auto& la = base.result.at("extra").at("lm");
  const auto& lb = run.result.at("extra").at("lm");
  EXPECT_EQ(la.at("real_tokens"), lb.at("real_tokens"));
  EXPECT_GT(lb.at("positions").get<int64_t>(), la.at("positions").get<int64_t>())
      << "nothing was padded";
  for (const auto& len : lb.at("batch_lengths")) EXPECT_EQ(len.get<int64_t>() % 8, 0);
}

TEST(LmTrain, OsftTrainsFewerParameters) {
  const auto osft = run_trainer(lm_run(3, 2, 1, 0, "lm_osft"));
  ASSERT_EQ(osft.exit_code, 0) << osft.stderr_text;
  EXPECT_EQ(osft.result.at("workload"), "lm_osft");
  EXPECT_LT(osft.result.at("memory").at("breakdown").at("parameters").get<int64_t>(),
            baseline().result.at("memory").at("breakdown").at("parameters").get<int64_t>());
  EXPECT_GT(osft.result.at("memory").at("breakdown").at("frozen").get<int64_t>(), 0);
  const auto again = run_trainer(lm_run(3, 2, 1, 0, "lm_osft"));
  expect_bitwise_equal(osft.result, again.result);
}

TEST(LmTrain, MissingCorpusExits2) {
  const auto r = run_trainer(lm_run(), {{"SPEEDGATE_LM_CORPUS_DIR", "/nonexistent/licenses"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("/nonexistent/licenses"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("missing"), std::string::npos) << r.stderr_text;
}

TEST(LmTrain, SwitchOfAnotherWorkloadExits2) {
  const auto lm = run_trainer(lm_run(), {{"SG_TEXT_CACHE", "1"}});
  EXPECT_EQ(lm.exit_code, 2);
  EXPECT_NE(lm.stderr_text.find("SG_TEXT_CACHE=1 does not apply to workload lm"), std::string::npos)
      << lm.stderr_text;
  EXPECT_TRUE(lm.result.is_null()) << "no result file for a refused run";
  const auto wam = run_trainer(tiny_run(), {{"SG_PAD_TO_8", "1"}});
  EXPECT_EQ(wam.exit_code, 2);
  EXPECT_NE(wam.stderr_text.find("SG_PAD_TO_8=1 does not apply to workload wam"), std::string::npos)
      << wam.stderr_text;
  // Default values of other workloads' switches are fine (presets list them).
  EXPECT_EQ(run_trainer(lm_run(1), {{"SG_TEXT_CACHE", "0"}}).exit_code, 0);
}

TEST(LmTrain, UnknownSizeExits2) {
  const auto r = run_trainer("run --workload lm --size huge --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("unknown size 'huge' of workload lm"), std::string::npos)
      << r.stderr_text;
}

TEST(LmManifest, WorkloadsSizesAndSwitchWorkloads) {
  const auto m = describe();
  std::map<std::string, nlohmann::json> workloads;
  for (const auto& w : m.at("workloads")) workloads[w.at("name").get<std::string>()] = w;
  ASSERT_TRUE(workloads.count("lm") && workloads.count("lm_osft") && workloads.count("wam"));
  std::vector<std::string> sizes;
  for (const auto& s : workloads["lm"].at("sizes")) {
    sizes.push_back(s.at("name"));
    EXPECT_GT(s.at("trainable_params").get<int64_t>(), 0);
    EXPECT_GT(s.at("model_flops_per_token").get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(
        s.at("model_flops_per_sample").get<double>(),
        s.at("model_flops_per_token").get<double>() * s.at("tokens_per_sample").get<double>());
  }
  EXPECT_EQ(sizes, (std::vector<std::string>{"tiny", "small", "1b", "3b"}));
  for (const auto& s : m.at("switches")) {
    ASSERT_TRUE(s.contains("workloads")) << s.at("name");
    EXPECT_FALSE(s.at("workloads").empty()) << s.at("name");
    if (s.at("name") == "PAD_TO_8") EXPECT_EQ(s.at("workloads"), nlohmann::json({"lm", "lm_osft"}));
    if (s.at("name") == "TEXT_CACHE") EXPECT_EQ(s.at("workloads"), nlohmann::json({"wam"}));
    if (s.at("name") == "CKPT_LAYERS")
      EXPECT_EQ(s.at("workloads"), nlohmann::json({"wam", "lm", "lm_osft"}));
  }
}

}  // namespace
}  // namespace sg::trainer::testing
