// Which workloads read which switches: every switch is read by some registered workload,
// the lm switches are where docs/switches.md says, and check_switches_read refuses a
// non-default value (or a kernel-family variable) for a workload that does not read it
// while accepting defaults.
#include "trainer/errors.hpp"
#include "trainer/switches/switch_config.hpp"
#include "trainer/switches/switch_table.hpp"
#include "trainer/workload/workload.hpp"

#include <gtest/gtest.h>

namespace sg::trainer {
namespace {

std::string refusal(const Switches& sw, const std::string& workload) {
  try {
    check_switches_read(sw, workload_named(workload));
  } catch (const BadInputError& e) {
    return e.what();
  }
  return "";
}

bool reads(const std::string& workload, const char* name) {
  return workload_named(workload).reads_switch(*find_switch(name));
}

TEST(SwitchWorkloads, EverySwitchIsReadBySomeWorkload) {
  for (const auto& s : switch_table()) {
    EXPECT_FALSE(workload_names_reading(s).empty()) << s.name;
  }
  for (const char* name :
       {"ATTN_BACKEND", "FUSED_ROPE", "CUDA_GRAPHS", "CKPT_LAYERS", "PAD_TO_8"}) {
    EXPECT_TRUE(reads("lm", name)) << name;
    EXPECT_TRUE(reads("lm_osft", name)) << name;
  }
  for (const char* name :
       {"TEXT_CACHE", "FAST_CAT", "FUSED_ADALN", "DATA_WORKERS", "MIXED_ATTN_CKPT"}) {
    EXPECT_FALSE(reads("lm", name)) << name;
  }
  EXPECT_FALSE(reads("wam", "PAD_TO_8"));
  EXPECT_EQ(workload_names_reading(*find_switch("NUMA_BIND")),
            (std::vector<std::string>{"wam", "lm", "lm_osft"}));
}

TEST(SwitchWorkloads, RefusesSwitchesTheWorkloadDoesNotRead) {
  EXPECT_EQ(refusal(resolve_switches({{"SG_PAD_TO_8", "1"}, {"SG_CKPT_LAYERS", "0"}}, ""), "lm"),
            "");
  EXPECT_NE(refusal(resolve_switches({{"SG_PAD_TO_8", "1"}}, ""), "wam")
                .find("SG_PAD_TO_8=1 does not apply to workload wam"),
            std::string::npos);
  EXPECT_NE(
      refusal(resolve_switches({{"SG_TEXT_CACHE", "1"}}, ""), "lm_osft").find("SG_TEXT_CACHE=1"),
      std::string::npos);
  // Defaults of other workloads' switches pass (a preset may spell them out).
  EXPECT_EQ(refusal(resolve_switches({{"SG_TEXT_CACHE", "0"}, {"SG_PAD_TO_8", "0"}}, ""), "lm"),
            "");
  EXPECT_EQ(refusal(resolve_switches({{"SG_TEXT_CACHE", "0"}, {"SG_PAD_TO_8", "0"}}, ""), "wam"),
            "");
  // A kernel-family variable goes with its switch (CAT is FAST_CAT's family: wam only).
  Switches sw = resolve_switches({}, "");
  sw.kernel_params["CAT"] = "threads=128";
  EXPECT_NE(refusal(sw, "lm").find("SG_KERNEL_CAT"), std::string::npos);
  EXPECT_EQ(refusal(sw, "wam"), "");
}

// The registry is what main, the manifest and run validation iterate.
TEST(WorkloadRegistry, NamesSizesAndEntries) {
  std::vector<std::string> names;
  for (const auto& w : workloads()) {
    names.push_back(w.name);
    ASSERT_TRUE(w.sizes && w.check_size && w.run) << w.name;
    ASSERT_FALSE(w.sizes().empty()) << w.name;
    for (const auto& z : w.sizes()) {
      EXPECT_NO_THROW(w.check_size(z.name)) << w.name << " " << z.name;
      EXPECT_GT(z.trainable_params, 0) << w.name << " " << z.name;
      EXPECT_GT(z.model_flops_per_sample, 0) << w.name << " " << z.name;
    }
    EXPECT_THROW(w.check_size("tinny"), BadInputError) << w.name;
    EXPECT_EQ(find_workload(w.name), &w);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"wam", "lm", "lm_osft"}));
  EXPECT_EQ(workload_names_with(&Workload::data_parallel), std::vector<std::string>{"wam"});
  EXPECT_EQ(workload_names_with(&Workload::kernel_trial), std::vector<std::string>{"wam"});
  EXPECT_EQ(find_workload("vit"), nullptr);
  try {
    workload_named("lm_osf");
    FAIL() << "an unknown workload must throw";
  } catch (const BadInputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'lm_osft'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(this trainer has: wam, lm, lm_osft)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sg::trainer
