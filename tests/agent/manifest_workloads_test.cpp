// Per-switch "workloads" (protocol §1): parsed and validated, absent means every
// workload, and a campaign's search space (Manifest::for_workload) holds only the
// switches and kernel families that apply to its workload.
#include <gtest/gtest.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/protocol/config.hpp"
#include "agent/protocol/manifest.hpp"

namespace sg::agent {
namespace {

nlohmann::json two_workload_manifest() {
  auto j = nlohmann::json::parse(
      read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/recorded_manifest.json")
          .value());
  j["workloads"].push_back(
      {{"name", "lm"}, {"sizes", {{{"name", "tiny"}, {"default_micro_batch", 2}}}}});
  for (auto& s : j["switches"]) {
    if (s["name"] == "A") s["workloads"] = {"wam"};
    if (s["name"] == "B") s["workloads"] = {"lm"};
    if (s["name"] == "C") s["workloads"] = {"wam", "lm"};
  }
  j["kernel_families"] = {{{"name", "ROPE"},
                           {"env", "SG_KERNEL_ROPE"},
                           {"switch", "A"},
                           {"parameters", {{{"name", "threads"}, {"values", {"64", "128"}}}}},
                           {"variants", {"plain_aten"}},
                           {"available", true}}};
  return j;
}

TEST(ManifestWorkloads, ParsedAndAbsentMeansEvery) {
  const Manifest m = parse_manifest(two_workload_manifest());
  EXPECT_EQ(m.find_switch("A")->workloads, (std::vector<std::string>{"wam"}));
  EXPECT_TRUE(m.find_switch("A")->applies_to("wam"));
  EXPECT_FALSE(m.find_switch("A")->applies_to("lm"));
  EXPECT_TRUE(m.find_switch("MEM")->workloads.empty());
  EXPECT_TRUE(m.find_switch("MEM")->applies_to("lm"))
      << "no field: every workload (backward compatible)";
}

TEST(ManifestWorkloads, ForWorkloadKeepsOnlyApplicableSwitchesAndFamilies) {
  const Manifest m = parse_manifest(two_workload_manifest());
  const Manifest lm = m.for_workload("lm");
  EXPECT_EQ(lm.find_switch("A"), nullptr);
  EXPECT_NE(lm.find_switch("B"), nullptr);
  EXPECT_NE(lm.find_switch("C"), nullptr);
  EXPECT_NE(lm.find_switch("MEM"), nullptr);
  EXPECT_TRUE(lm.kernel_families.empty()) << "ROPE's switch A does not apply to lm";
  EXPECT_EQ(lm.raw, m.raw) << "the stored manifest stays whole";
  EXPECT_TRUE(validate_config({{"A", "1"}}, lm).has_value())
      << "a wam switch is no candidate of an lm campaign";
  const Manifest wam = m.for_workload("wam");
  EXPECT_EQ(wam.find_switch("B"), nullptr);
  EXPECT_EQ(wam.kernel_families.size(), 1u);
}

// "kernel_trial": a list of workloads keeps kernel trials to them (speedgate-train's
// kernel-trial knows wam's shapes only); true means every workload.
TEST(ManifestWorkloads, KernelTrialsOnlyForTheWorkloadsTheTrainerNames) {
  auto j = two_workload_manifest();
  j["kernel_families"][0]["switch"] = "C";  // applies to both workloads
  j["kernel_families"][0]["kernel_trial"] = {"wam"};
  const Manifest m = parse_manifest(j);
  EXPECT_TRUE(m.for_workload("wam").kernel_families.at(0).kernel_trial);
  EXPECT_FALSE(m.for_workload("lm").kernel_families.at(0).kernel_trial)
      << "kept for lm, but not timeable there";
  j["kernel_families"][0]["kernel_trial"] = true;
  EXPECT_TRUE(parse_manifest(j).for_workload("lm").kernel_families.at(0).kernel_trial);
  j["kernel_families"][0]["kernel_trial"] = {1};
  EXPECT_THROW(parse_manifest(j), UsageError);
}

TEST(ManifestWorkloads, UnknownOrEmptyWorkloadListIsRejected) {
  auto j = two_workload_manifest();
  j["switches"][0]["workloads"] = {"video"};
  try {
    parse_manifest(j);
    FAIL() << "accepted an unknown workload";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'video' is not a workload"), std::string::npos)
        << e.what();
  }
  j["switches"][0]["workloads"] = nlohmann::json::array();
  EXPECT_THROW(parse_manifest(j), UsageError);
  j["switches"][0]["workloads"] = "wam";
  EXPECT_THROW(parse_manifest(j), UsageError);
}

// Per-switch "min_world_size" (protocol §1): a switch that does nothing on fewer ranks
// (data-parallel communication, ZeRO) is not searched by a campaign of smaller trials.

TEST(ManifestWorldSize, AbsentMeansOneAndSmallerTrialsDoNotSearchTheSwitch) {
  auto j = two_workload_manifest();
  for (auto& s : j["switches"]) {
    if (s["name"] == "A") s["min_world_size"] = 2;
  }
  const Manifest m = parse_manifest(j);
  EXPECT_EQ(m.find_switch("A")->min_world_size, 2);
  EXPECT_EQ(m.find_switch("B")->min_world_size, 1) << "no field: any world size";
  const Manifest one = m.for_world_size(1);
  EXPECT_EQ(one.find_switch("A"), nullptr);
  EXPECT_NE(one.find_switch("B"), nullptr);
  EXPECT_TRUE(one.kernel_families.empty()) << "ROPE's switch A is not searched, nor its variants";
  EXPECT_EQ(one.raw, m.raw) << "the stored manifest stays whole";
  const Manifest two = m.for_world_size(2);
  EXPECT_NE(two.find_switch("A"), nullptr);
  EXPECT_EQ(two.kernel_families.size(), 1u);
}

TEST(ManifestWorldSize, ZeroOrNonIntegerIsRejected) {
  for (const nlohmann::json bad : {nlohmann::json(0), nlohmann::json("2"), nlohmann::json(1.5)}) {
    auto j = two_workload_manifest();
    j["switches"][0]["min_world_size"] = bad;
    try {
      parse_manifest(j);
      FAIL() << "accepted min_world_size " << bad.dump();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("min_world_size"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sg::agent
