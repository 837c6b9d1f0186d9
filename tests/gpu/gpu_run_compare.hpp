// Shared by the GPU identity suites (wam and lm): two trainer runs (any type with
// exit_code, err and a parsed result) are bitwise the same training when every step's
// loss and grad-norm bits and both state digests are equal.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace sg::trainer::gpu_test {

template <class RunT>
void expect_bitwise_runs(const RunT& a, const RunT& b, const std::string& label) {
  ASSERT_EQ(a.exit_code, 0) << label << ": " << a.err;
  ASSERT_EQ(b.exit_code, 0) << label << ": " << b.err;
  const auto& sa = a.result["step_records"];
  const auto& sb = b.result["step_records"];
  ASSERT_EQ(sa.size(), sb.size()) << label;
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i]["loss_bits"], sb[i]["loss_bits"]) << label << " step " << i;
    EXPECT_EQ(sa[i]["grad_norm_bits"], sb[i]["grad_norm_bits"]) << label << " step " << i;
  }
  EXPECT_EQ(a.result["param_digest"], b.result["param_digest"]) << label;
  EXPECT_EQ(a.result["optimizer_digest"], b.result["optimizer_digest"]) << label;
}

}  // namespace sg::trainer::gpu_test
