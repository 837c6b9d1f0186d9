// Shared by the GPU identity suites (wam and lm): comparisons of two trainer runs
// (testing::TrainerRun, from trainer/trainer_harness.hpp's run_trainer) and the
// CUDA-graphs-with-every-SDPA-backend check both suites make.
#pragma once

#include "trainer/switches/switch_table.hpp"
#include "trainer/trainer_harness.hpp"
#include "trainer/workload/workload.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

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

// Both runs exited 0 with the same parameter and optimizer digests (`again` repeats `first`).
inline void expect_same_digests(const testing::TrainerRun& first,
                                const testing::TrainerRun& again) {
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  ASSERT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_EQ(first.result["param_digest"], again.result["param_digest"]);
  EXPECT_EQ(first.result["optimizer_digest"], again.result["optimizer_digest"]);
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

// The environments that set one switch to each of its non-default values, with the
// switches its `requires` names set as they require.
inline std::vector<Env> switch_cases(const SwitchSpec& s) {
  std::vector<Env> out;
  for (const auto& v : s.values) {
    if (v == s.default_value) continue;
    Env env{{s.env(), v}};
    for (const auto& req : s.requires)
      env["SG_" + req.substr(0, req.find('='))] = req.substr(req.find('=') + 1);
    out.push_back(env);
  }
  return out;
}

// A switch's run `b` against the default run `a`: with `bitwise`, every step's loss and
// grad-norm bits and both digests equal; otherwise close losses (expect_close_losses).
inline void expect_switch_identity(const nlohmann::json& a_result, const nlohmann::json& b_result,
                                   bool bitwise, const std::string& label) {
  const auto& a = a_result["step_records"];
  const auto& b = b_result["step_records"];
  ASSERT_EQ(a.size(), b.size()) << label;
  if (!bitwise) {
    expect_close_losses(a_result, b_result, label);  // bf16 autocast rounding
    return;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["loss_bits"], b[i]["loss_bits"]) << label << " step " << i;
    EXPECT_EQ(a[i]["grad_norm_bits"], b[i]["grad_norm_bits"]) << label << " step " << i;
  }
  EXPECT_EQ(a_result["param_digest"], b_result["param_digest"]) << label;
  EXPECT_EQ(a_result["optimizer_digest"], b_result["optimizer_digest"]) << label;
}

// Every case (switch_cases) of every available switch that `workload` reads, run by
// `run(env)` against the default run's result `base`: exit 0, then expect_switch_identity
// with `bitwise(s)`; `on_tolerance(result, label)`, if set, adds checks to a case that is
// not bitwise. A failed run ends the check, as an ASSERT in the test would.
inline void expect_every_switch_identity(
    const std::string& workload, const nlohmann::json& base,
    const std::function<testing::TrainerRun(const Env&)>& run,
    const std::function<bool(const SwitchSpec&)>& bitwise,
    const std::function<void(const nlohmann::json&, const std::string&)>& on_tolerance = {}) {
  for (const auto& s : switch_table()) {
    if (!s.unavailable_reason.empty() || !workload_named(workload).reads_switch(s)) continue;
    for (const auto& env : switch_cases(s)) {
      const auto r = run(env);
      const std::string label = s.env() + "=" + env.at(s.env());
      ASSERT_EQ(r.exit_code, 0) << label << ": " << r.stderr_text;
      const bool is_bitwise = bitwise(s);
      expect_switch_identity(base, r.result, is_bitwise, label);
      if (::testing::Test::HasFatalFailure()) return;
      if (!is_bitwise && on_tolerance) on_tolerance(r.result, label);
    }
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
