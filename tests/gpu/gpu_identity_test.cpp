// CUDA identity checks (label gpu; built only with SPEEDGATE_WITH_CUDA): for every switch
// available on this build, the small workload on the GPU against the default run:
// bitwise switches must match every step's bits and both digests; tolerance switches
// must stay finite and close. Plus out-of-memory reported as exit 3 with status oom.
#include "gpu_run_compare.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/trainer_harness.hpp"
#include "trainer/workload/workload.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace sg::trainer {
namespace {

using testing::TrainerRun;

// `speedgate-train run` on the wam workload, through the trainer tests' harness.
TrainerRun run(const std::string& size, int micro, const gpu_test::Env& env, int steps = 4,
               int accum = 1) {
  return testing::run_trainer("run --workload wam --size " + size + " --steps " +
                                  std::to_string(steps) + " --seed 0 --micro-batch " +
                                  std::to_string(micro) + " --grad-accum " + std::to_string(accum) +
                                  " --warmup-steps 1 --eval-batches 1",
                              env);
}

const TrainerRun& baseline() {
  static const TrainerRun r = run("small", 2, {});
  return r;
}

TEST(GpuIdentity, BaselineIsDeterministic) {
  gpu_test::expect_same_digests(baseline(), run("small", 2, {}));
}

TEST(GpuIdentity, EverySwitchAgainstDefault) {
  ASSERT_EQ(baseline().exit_code, 0) << baseline().stderr_text;
  gpu_test::expect_every_switch_identity(
      "wam", baseline().result, [](const gpu_test::Env& env) { return run("small", 2, env); },
      [](const SwitchSpec& s) { return s.identity == Identity::kBitwise; });
}

// CUDA_GRAPHS graphs only un-checkpointed layers: against the same run without it at
// CKPT_LAYERS=0 (every layer graphed) and 1 (the rest), with gradient accumulation and
// with the fused kernels on (both sides); the captures must have happened.
TEST(GpuIdentity, CudaGraphsBitwiseOnUncheckpointedLayers) {
  const std::vector<std::map<std::string, std::string>> sides = {
      {{"SG_CKPT_LAYERS", "0"}},
      {{"SG_CKPT_LAYERS", "1"}},
      {{"SG_CKPT_LAYERS", "0"},
       {"SG_FUSED_ADALN", "1"},
       {"SG_FUSED_ROPE", "1"},
       {"SG_FAST_CAT", "1"},
       {"SG_FUSED_QK_NORM", "1"}},
      {{"SG_CKPT_LAYERS", "0"}, {"SG_FAST_INPUT", "1"}, {"SG_TEXT_CACHE", "1"}},
  };
  for (const int accum : {1, 2}) {
    for (const auto& env : sides) {
      std::string label = "accum " + std::to_string(accum);
      for (const auto& [k, v] : env) label += " " + k + "=" + v;
      auto graphs = env;
      graphs["SG_CUDA_GRAPHS"] = "1";
      const auto plain = run("small", 2, env, 4, accum);
      const auto graphed = run("small", 2, graphs, 4, accum);
      gpu_test::expect_bitwise_runs(plain, graphed, label);
      EXPECT_NE(graphed.stderr_text.find("CUDA_GRAPHS captured wam.1"), std::string::npos)
          << label << ": " << graphed.stderr_text;
      EXPECT_EQ(plain.stderr_text.find("CUDA_GRAPHS captured"), std::string::npos) << label;
    }
  }
}

// At the default CKPT_LAYERS=-1 every layer is checkpointed: nothing is captured.
TEST(GpuIdentity, CudaGraphsCaptureNothingWhenEveryLayerIsCheckpointed) {
  const auto r = run("small", 2, {{"SG_CUDA_GRAPHS", "1"}});
  gpu_test::expect_bitwise_runs(baseline(), r, "SG_CUDA_GRAPHS=1 at CKPT_LAYERS=-1");
  EXPECT_EQ(r.stderr_text.find("CUDA_GRAPHS captured"), std::string::npos) << r.stderr_text;
}

// The SDPA backends are capturable inside a layer (the mask checks happen before the
// layers): each runs graphed and stays close to the same backend without graphs (their
// backward is not deterministic, so not bitwise).
TEST(GpuIdentity, CudaGraphsCaptureEverySdpaBackend) {
  gpu_test::expect_every_sdpa_backend_graphs(
      [](const gpu_test::Env& env) { return run("small", 2, env); }, "wam.0");
}

// Layers that checkpoint their attention (MIXED_ATTN_CKPT) are not graphed.
TEST(GpuIdentity, CudaGraphsLeaveMixedAttnCkptLayersEager) {
  const std::map<std::string, std::string> env{{"SG_MIXED_ATTN_CKPT", "1"},
                                               {"SG_CKPT_LAYERS", "0"}};
  auto graphs = env;
  graphs["SG_CUDA_GRAPHS"] = "1";
  const auto plain = run("small", 2, env);
  const auto r = run("small", 2, graphs);
  gpu_test::expect_bitwise_runs(plain, r, "SG_CUDA_GRAPHS=1 with SG_MIXED_ATTN_CKPT=1");
  EXPECT_EQ(r.stderr_text.find("CUDA_GRAPHS captured"), std::string::npos) << r.stderr_text;
}

// The switches that change how a step is queued, not what it computes (ASYNC_STEP_STATS,
// NO_UNINIT_FILL), both at once: on the default and on
// graphed layers with the fused kernels, with and without accumulation, bitwise the same
// run without them.
TEST(GpuIdentity, StepQueueingSwitchesTogetherAreBitwise) {
  const std::vector<std::map<std::string, std::string>> sides = {
      {},
      {{"SG_CKPT_LAYERS", "1"},
       {"SG_CUDA_GRAPHS", "1"},
       {"SG_FUSED_ADALN", "1"},
       {"SG_FUSED_ROPE", "1"},
       {"SG_FAST_CAT", "1"},
       {"SG_FAST_INPUT", "1"},
       {"SG_PIN_MEMORY", "1"},
       {"SG_TEXT_CACHE", "1"}},
  };
  for (const int accum : {1, 3}) {
    for (const auto& env : sides) {
      std::string label =
          "accum " + std::to_string(accum) + (env.empty() ? " default" : " graphed+fused");
      auto queued = env;
      queued["SG_ASYNC_STEP_STATS"] = "1";
      queued["SG_NO_UNINIT_FILL"] = "1";
      gpu_test::expect_bitwise_runs(run("small", 2, env, 4, accum),
                                    run("small", 2, queued, 4, accum), label);
    }
  }
}

// base at micro-batch 256 without recompute needs several times an H200's memory.
TEST(GpuOom, HugeMicroBatchExitsThree) {
  const auto r = run("base", 256, {{"SG_CKPT_LAYERS", "0"}}, 1);
  EXPECT_EQ(r.exit_code, 3) << r.stderr_text;
  if (!r.result.is_null()) EXPECT_EQ(r.result["status"], "oom");
}

}  // namespace
}  // namespace sg::trainer
