// CUDA identity checks of the lm workload (label gpu): lm small on the GPU (bf16 autocast)
// repeats bitwise, every available switch that applies to lm is bitwise (or, tolerance
// class, finite and close) against the default, and lm_osft runs; CUDA_GRAPHS bitwise
// on un-checkpointed blocks (lm and lm_osft) and capturable with every SDPA backend.
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

// `speedgate-train run` on an lm workload (small, 4 steps, micro-batch 4, grad-accum 2),
// through the trainer tests' harness.
TrainerRun run_lm(const std::string& workload, const gpu_test::Env& env) {
  return testing::run_trainer(
      "run --workload " + workload +
          " --size small --steps 4 --seed 0 --micro-batch 4 --grad-accum 2 --warmup-steps 1"
          " --eval-batches 1",
      env);
}

const TrainerRun& lm_baseline() {
  static const TrainerRun r = run_lm("lm", {});
  return r;
}

TEST(GpuLmIdentity, BaselineIsDeterministic) {
  ASSERT_EQ(lm_baseline().exit_code, 0) << lm_baseline().stderr_text;
  EXPECT_EQ(lm_baseline().result["fingerprint"]["device"], "cuda");
  gpu_test::expect_same_digests(lm_baseline(), run_lm("lm", {}));
}

TEST(GpuLmIdentity, EveryLmSwitchAgainstDefault) {
  ASSERT_EQ(lm_baseline().exit_code, 0) << lm_baseline().stderr_text;
  const auto& base = lm_baseline().result;
  gpu_test::expect_every_switch_identity(
      "lm", base, [](const gpu_test::Env& env) { return run_lm("lm", env); },
      [](const SwitchSpec& s) { return s.identity == Identity::kBitwise && s.deterministic; },
      [&base](const nlohmann::json& result, const std::string& label) {
        EXPECT_EQ(base["extra"]["lm"]["real_tokens"], result["extra"]["lm"]["real_tokens"])
            << label;
      });
}

// CUDA_GRAPHS graphs the blocks CKPT_LAYERS leaves un-checkpointed: bitwise against the
// same run without it (grad-accum 2, as every run of this harness), also with FUSED_ROPE
// and PAD_TO_8 on both sides, for lm and lm_osft; the captures must have happened.
TEST(GpuLmIdentity, CudaGraphsBitwiseOnUncheckpointedBlocks) {
  const std::vector<std::map<std::string, std::string>> sides = {
      {{"SG_CKPT_LAYERS", "0"}},
      {{"SG_CKPT_LAYERS", "2"}},
      {{"SG_CKPT_LAYERS", "0"}, {"SG_FUSED_ROPE", "1"}},
      {{"SG_CKPT_LAYERS", "0"}, {"SG_PAD_TO_8", "1"}},
  };
  for (const char* workload : {"lm", "lm_osft"}) {
    for (const auto& env : sides) {
      std::string label = workload;
      for (const auto& [k, v] : env) label += " " + k + "=" + v;
      auto graphs = env;
      graphs["SG_CUDA_GRAPHS"] = "1";
      const auto plain = run_lm(workload, env);
      const auto graphed = run_lm(workload, graphs);
      gpu_test::expect_bitwise_runs(plain, graphed, label);
      EXPECT_NE(graphed.stderr_text.find("CUDA_GRAPHS captured lm.3"), std::string::npos)
          << label << ": " << graphed.stderr_text;
    }
  }
}

// The SDPA backends are capturable (no host sync inside a block): each runs graphed and
// stays close to the same backend without graphs (their backward is not deterministic).
TEST(GpuLmIdentity, CudaGraphsCaptureEverySdpaBackend) {
  gpu_test::expect_every_sdpa_backend_graphs(
      [](const gpu_test::Env& env) { return run_lm("lm", env); }, "lm.0");
}

TEST(GpuLmIdentity, OsftRunsAndRepeats) {
  const auto a = run_lm("lm_osft", {});
  ASSERT_EQ(a.exit_code, 0) << a.stderr_text;
  const auto b = run_lm("lm_osft", {});
  ASSERT_EQ(b.exit_code, 0) << b.stderr_text;
  EXPECT_EQ(a.result["param_digest"], b.result["param_digest"]);
}

}  // namespace
}  // namespace sg::trainer
