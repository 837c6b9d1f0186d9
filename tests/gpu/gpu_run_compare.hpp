// Shared by the GPU identity suites (wam and lm): comparisons of two trainer runs
// (testing::TrainerRun, from trainer/trainer_harness.hpp's run_trainer) and the
// CUDA-graphs-with-every-SDPA-backend check both suites make.
#pragma once

#include "trainer/trainer_harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>

namespace sg::trainer::gpu_test {

using Env = std::map<std::string, std::string>;

// Both runs exited 0 and are bitwise the same training (testing::expect_bitwise_equal:
// status ok, every step's loss and grad-norm bits, both digests, the eval loss bits).
inline void expect_bitwise_runs(const testing::TrainerRun& a, const testing::TrainerRun& b,
                                const std::string& label) {
  ASSERT_EQ(a.exit_code, 0) << label << ": " << a.stderr_text;
  ASSERT_EQ(b.exit_code, 0) << label << ": " << b.stderr_text;
  SCOPED_TRACE(label);
  testing::expect_bitwise_equal(a.result, b.result);
}

// The same number of steps, and every step's loss of `b` finite and within 2 % of `a`'s
// (bf16 autocast rounding, or a backward that is not deterministic).
inline void expect_close_losses(const nlohmann::json& a_result, const nlohmann::json& b_result,
                                const std::string& label) {
  const auto& a = a_result["step_records"];
  const auto& b = b_result["step_records"];
  ASSERT_EQ(a.size(), b.size()) << label;
  for (size_t i = 0; i < a.size(); ++i) {
    const double la = a[i]["loss"].get<double>(), lb = b[i]["loss"].get<double>();
    EXPECT_TRUE(std::isfinite(lb)) << label;
    EXPECT_NEAR(lb / la, 1.0, 2e-2) << label << " step " << i;
  }
}

// The SDPA backends are capturable: for each of efficient, flash and cudnn at
// CKPT_LAYERS=0, `run(env)` with CUDA_GRAPHS=1 succeeds, captures `first_layer` (e.g.
// "wam.0") and stays close (expect_close_losses) to the same backend without graphs.
// A failed run or a step-count mismatch ends the check, as an ASSERT in the test would.
inline void expect_every_sdpa_backend_graphs(
    const std::function<testing::TrainerRun(const Env&)>& run, const std::string& first_layer) {
  for (const char* backend : {"efficient", "flash", "cudnn"}) {
    const Env env{{"SG_CKPT_LAYERS", "0"}, {"SG_ATTN_BACKEND", backend}};
    auto graphs = env;
    graphs["SG_CUDA_GRAPHS"] = "1";
    const auto plain = run(env);
    const auto graphed = run(graphs);
    ASSERT_EQ(plain.exit_code, 0) << backend << ": " << plain.stderr_text;
    ASSERT_EQ(graphed.exit_code, 0) << backend << ": " << graphed.stderr_text;
    EXPECT_NE(graphed.stderr_text.find("CUDA_GRAPHS captured " + first_layer), std::string::npos)
        << backend << ": " << graphed.stderr_text;
    expect_close_losses(plain.result, graphed.result, backend);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace sg::trainer::gpu_test
