// Per-switch workloads: every switch names known workloads, the lm switches are where
// docs/switches.md says, and check_switches_apply refuses a non-default value (or a
// kernel-family variable) for a workload that does not read it while accepting defaults.
#include "trainer/errors.hpp"
#include "trainer/workload/lm/lm_config.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/switches/switch_table.hpp"

#include <gtest/gtest.h>

namespace sg::trainer {
namespace {

std::string refusal(const Switches& sw, const std::string& workload) {
  try {
    check_switches_apply(sw, workload);
  } catch (const BadInputError& e) {
    return e.what();
  }
  return "";
}

TEST(SwitchWorkloads, EverySwitchNamesKnownWorkloads) {
  for (const auto& s : switch_table()) {
    ASSERT_FALSE(s.workloads.empty()) << s.name;
    for (const auto& w : s.workloads) EXPECT_TRUE(w == "wam" || is_lm_workload(w)) << s.name << ": " << w;
  }
  for (const char* name : {"ATTN_BACKEND", "FUSED_ROPE", "CUDA_GRAPHS", "CKPT_LAYERS", "PAD_TO_8"}) {
    EXPECT_TRUE(find_switch(name)->applies_to("lm")) << name;
    EXPECT_TRUE(find_switch(name)->applies_to("lm_osft")) << name;
  }
  for (const char* name : {"TEXT_CACHE", "FAST_CAT", "FUSED_ADALN", "DATA_WORKERS", "MIXED_ATTN_CKPT"}) {
    EXPECT_FALSE(find_switch(name)->applies_to("lm")) << name;
  }
  EXPECT_FALSE(find_switch("PAD_TO_8")->applies_to("wam"));
}

TEST(SwitchWorkloads, RefusesSwitchesTheWorkloadDoesNotRead) {
  EXPECT_EQ(refusal(resolve_switches({{"SG_PAD_TO_8", "1"}, {"SG_CKPT_LAYERS", "0"}}, ""), "lm"), "");
  EXPECT_NE(refusal(resolve_switches({{"SG_PAD_TO_8", "1"}}, ""), "wam").find("SG_PAD_TO_8=1 does not apply to workload wam"),
            std::string::npos);
  EXPECT_NE(refusal(resolve_switches({{"SG_TEXT_CACHE", "1"}}, ""), "lm_osft").find("SG_TEXT_CACHE=1"),
            std::string::npos);
  // Defaults of other workloads' switches pass (a preset may spell them out).
  EXPECT_EQ(refusal(resolve_switches({{"SG_TEXT_CACHE", "0"}, {"SG_PAD_TO_8", "0"}}, ""), "lm"), "");
  EXPECT_EQ(refusal(resolve_switches({{"SG_TEXT_CACHE", "0"}, {"SG_PAD_TO_8", "0"}}, ""), "wam"), "");
  // A kernel-family variable goes with its switch (CAT is FAST_CAT's family: wam only).
  Switches sw = resolve_switches({}, "");
  sw.kernel_params["CAT"] = "threads=128";
  EXPECT_NE(refusal(sw, "lm").find("SG_KERNEL_CAT"), std::string::npos);
  EXPECT_EQ(refusal(sw, "wam"), "");
}

}  // namespace
}  // namespace sg::trainer
