// End-to-end identity tests through the built binary: determinism, every bitwise switch
// with a CPU path against the default, tolerance switches finite and close.
#include "trainer_harness.hpp"

#include <gtest/gtest.h>

namespace sg::trainer::testing {
namespace {

const TrainerRun& baseline() {
  static const TrainerRun run = cached_run_trainer(tiny_run());
  return run;
}

TEST(TrainIdentity, SameSeedTwiceIsBitwiseEqual) {
  expect_run_bitwise_equal(baseline(), tiny_run());
}

TEST(TrainIdentity, OtherSeedDiffers) {
  const auto b = run_trainer(tiny_run(3, 2, 1, /*seed=*/1000));
  ASSERT_EQ(b.exit_code, 0) << b.stderr_text;
  EXPECT_NE(baseline().result.at("param_digest"), b.result.at("param_digest"));
}

// Long enough that the 40 prompts repeat: whole batches hit the cache, and the offloaded
// encoder is loaded only for batches with a miss. Still bitwise the default.
TEST(TrainIdentity, TextCacheHitsStayBitwise) {
  const std::string args = tiny_run(/*steps=*/30) + " --eval-batches 0";
  const auto base = run_trainer(args);
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const auto cached = run_trainer(args, {{"SG_TEXT_CACHE", "1"}, {"SG_TEXT_ENCODER_OFFLOAD", "1"}});
  ASSERT_EQ(cached.exit_code, 0) << cached.stderr_text;
  const auto& stats = cached.result.at("extra").at("text_cache");
  EXPECT_GT(stats.at("hits").get<int>(), 20);
  const int loads = cached.result.at("extra").at("text_encoder_offload").at("loads").get<int>();
  EXPECT_LT(loads, 30);
  EXPECT_GT(loads, 0);
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(base.result["step_records"][i]["loss_bits"],
              cached.result["step_records"][i]["loss_bits"])
        << i;
  }
  EXPECT_EQ(base.result.at("param_digest"), cached.result.at("param_digest"));
  EXPECT_EQ(base.result.at("optimizer_digest"), cached.result.at("optimizer_digest"));
}

class BitwiseSwitch : public ::testing::TestWithParam<EnvCase> {};

TEST_P(BitwiseSwitch, DigestsEqualDefault) {
  expect_run_bitwise_equal(baseline(), tiny_run(), GetParam().env);
}

INSTANTIATE_TEST_SUITE_P(
    CpuPaths, BitwiseSwitch,
    ::testing::Values(
        EnvCase{"TextCache", {{"SG_TEXT_CACHE", "1"}}},
        EnvCase{"TextCacheOneEntry", {{"SG_TEXT_CACHE", "1"}, {"SG_TEXT_CACHE_ENTRIES", "1"}}},
        EnvCase{"TextEncoderOffload", {{"SG_TEXT_CACHE", "1"}, {"SG_TEXT_ENCODER_OFFLOAD", "1"}}},
        EnvCase{"FastInput", {{"SG_FAST_INPUT", "1"}}},
        EnvCase{"VaeFirst", {{"SG_VAE_FIRST", "1"}}},
        EnvCase{"NoCheckpoint", {{"SG_CKPT_LAYERS", "0"}}},
        EnvCase{"CheckpointFirstLayer", {{"SG_CKPT_LAYERS", "1"}}},
        EnvCase{"MixedAttnCheckpoint", {{"SG_CKPT_LAYERS", "0"}, {"SG_MIXED_ATTN_CKPT", "1"}}},
        EnvCase{"InlineLoader", {{"SG_DATA_WORKERS", "0"}}},
        EnvCase{"ThreeWorkers", {{"SG_DATA_WORKERS", "3"}}},
        EnvCase{"AsyncStepStats", {{"SG_ASYNC_STEP_STATS", "1"}}},
        EnvCase{"AllBitwise",
                {{"SG_TEXT_CACHE", "1"},
                 {"SG_ASYNC_STEP_STATS", "1"},
                 {"SG_TEXT_ENCODER_OFFLOAD", "1"},
                 {"SG_FAST_INPUT", "1"},
                 {"SG_VAE_FIRST", "1"},
                 {"SG_CKPT_LAYERS", "0"},
                 {"SG_MIXED_ATTN_CKPT", "1"},
                 {"SG_DATA_WORKERS", "2"}}}),
    env_case_name);

class ToleranceSwitch : public ::testing::TestWithParam<EnvCase> {};

TEST_P(ToleranceSwitch, FiniteAndClose) {
  const auto& base = baseline();
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const auto run = run_trainer(tiny_run(), GetParam().env);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  expect_steps_close(base.result, run.result, /*loss_tol=*/1e-3, /*grad_tol=*/1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    CpuPaths, ToleranceSwitch,
    ::testing::Values(EnvCase{"TextMissFast", {{"SG_TEXT_CACHE", "1"}, {"SG_TEXT_MISS_FAST", "1"}}},
                      EnvCase{"ContextTrunc", {{"SG_TEXT_CACHE", "1"}, {"SG_CONTEXT_TRUNC", "1"}}},
                      EnvCase{"VaeFullClip", {{"SG_VAE_FULLCLIP", "1"}}},
                      EnvCase{"VaeChannelsLast", {{"SG_VAE_CHANNELS_LAST", "1"}}}),
    env_case_name);

// Three micro-batches a step: the lagged loss is summed on the device and divided on the
// host, and must give the bits the host-side sum gives.
TEST(TrainIdentity, AsyncStepStatsWithGradientAccumulation) {
  const std::string args = tiny_run(/*steps=*/3, /*micro=*/1, /*accum=*/3);
  expect_run_bitwise_equal(run_trainer(args), args, {{"SG_ASYNC_STEP_STATS", "1"}});
}

// SPEEDGATE_PROFILE=1 only synchronises and times phases: the same bits as an unprofiled
// run, and the phase totals cover the steady-state steps.
TEST(TrainIdentity, PhaseProfileTimesPhasesWithoutChangingResults) {
  const auto profiled = run_trainer(tiny_run(), {{"SPEEDGATE_PROFILE", "1"}});
  ASSERT_EQ(profiled.exit_code, 0) << profiled.stderr_text;
  expect_bitwise_equal(baseline().result, profiled.result);
  const auto& phases = profiled.result.at("extra").at("phase_seconds");
  for (const char* phase : {"data", "text", "vae", "forward", "backward", "clip", "optimizer"}) {
    ASSERT_TRUE(phases.contains(phase)) << phase;
    EXPECT_GT(phases.at(phase).get<double>(), 0.0) << phase;
  }
  EXPECT_GT(profiled.result.at("extra").at("build_seconds").get<double>(), 0.0);
  EXPECT_FALSE(baseline().result.at("extra").contains("phase_seconds"));
}

}  // namespace
}  // namespace sg::trainer::testing
