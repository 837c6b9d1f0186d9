// Outputs people read (issue 29 item 6): configuration keys wrapped, never cut; one
// name per count (trainer runs, evaluations); one headline figure per preset in its
// header, the presets README and the report; the presets README shows each switch's
// doc, default and its own measured gain and says where a figure comes from.
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/common/files.hpp"
#include "agent/presets/emit.hpp"
#include "agent/report/summary.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

namespace fs = std::filesystem;

TEST(WrapConfigKey, WrapsAtCommasAndNeverCuts) {
  const std::string key =
      "CKPT_LAYERS=16,CONTEXT_TRUNC=1,FAST_CAT=1,FAST_INPUT=1,FUSED_ADALN=1,FUSED_QK_NORM=1,"
      "FUSED_ROPE=1,TEXT_CACHE=1,TEXT_MISS_FAST=1";
  const std::string wrapped = wrap_config_key(key, 6, 60);
  std::istringstream in(wrapped);
  std::string joined;
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    EXPECT_LE(line.size(), 60u) << line;
    ASSERT_EQ(line.rfind("      ", 0), 0u) << line;
    joined += line.substr(6);
  }
  EXPECT_EQ(joined, key);
  EXPECT_GE(lines, 2);
  EXPECT_EQ(wrap_config_key("", 2, 60), "  (baseline: all defaults)\n");
}

struct H200Db : ::testing::Test {
  std::string dir = test::make_temp_dir("readable");
  void SetUp() override {
    fs::copy_file(fs::path(SPEEDGATE_SOURCE_DIR) / "benchmarks/results/h200-campaign.db",
                  dir + "/c.db");
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(H200Db, OneHeadlinePerPresetAndSwitchesExplained) {
  Store store(dir + "/c.db");
  const EmitResult r = emit_presets(store, 1, dir + "/presets");
  const std::string fast = read_file(dir + "/presets/fast.env").value_or("");
  const std::string md = read_file(dir + "/presets/README.md").value_or("");
  // The committed fast.env was ranked at the target by paired finals: 3.927x +- 0.128.
  EXPECT_NE(fast.find("# speedgate preset 'fast' for NVIDIA H200 GPUs with 141.00 GiB"),
            std::string::npos)
      << fast;
  EXPECT_NE(fast.find("# speedup: 3.927x ± 0.128 (half-range, no interval) (paired finals at the "
                      "target micro-batch "
                      "32, 3 rounds)"),
            std::string::npos)
      << fast;
  EXPECT_NE(fast.find("# campaign speedup: 3.601x"), std::string::npos) << fast;
  EXPECT_NE(md.find("| `fast.env` | 141.00 GiB | `"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3.927x ± 0.128 (half-range, no interval) | paired finals at the target "
                    "micro-batch 32, 3 rounds |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Measured on **NVIDIA H200**"), std::string::npos) << md;
  // Each switch: its default and its doc, then its own gain or why there is none.
  EXPECT_NE(md.find("| TEXT_CACHE | `SG_TEXT_CACHE` | `0` | Bounded LRU cache"), std::string::npos)
      << md;
  EXPECT_NE(md.find("Own gain: the switch alone against the baseline"), std::string::npos) << md;
  // This campaign measured TEXT_CACHE only inside combinations; FUSED_QK_NORM alone (with
  // its kernel variant) at 1.029x.
  EXPECT_NE(md.find("bitwise (speed) | yes | not measured alone |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.029x ± 0.000 (half-range, no interval) "
                    "(`FUSED_QK_NORM=1,KERNEL_QKNORM=threads=128;vec=4`, 4 steps, "
                    "evaluation "),
            std::string::npos)
      << md;

  // The report shows the same figure and full keys, and names both counts.
  const nlohmann::json summary = campaign_summary(store, std::int64_t{1});
  const std::string text = format_summary(summary);
  EXPECT_NE(text.find("preset fast: " + dir + "/presets/fast.env 3.927x ± 0.128"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  trainer runs: "), std::string::npos) << text;
  EXPECT_NE(text.find("  evaluations: "), std::string::npos) << text;
  EXPECT_TRUE(r.all_budgets_met);
  for (const auto& e :
       summary["evaluations"]) {  // every item of every key, whole (a wrap never cuts one)
    std::istringstream items(e["config_key"].get<std::string>());
    for (std::string item; std::getline(items, item, ',');)
      EXPECT_NE(text.find(item), std::string::npos) << item;
  }
}

TEST_F(H200Db, ThePresetsReadmeSaysWhatEachPresetCarries) {
  Store store(dir + "/c.db");
  emit_presets(store, 1, dir + "/presets");
  const std::string md = read_file(dir + "/presets/README.md").value_or("");
  const auto carried = md.find("## What each preset carries");
  ASSERT_NE(carried, std::string::npos) << md;
  const std::string section = md.substr(carried, md.find("## Switches") - carried);
  // No switch of the seventh campaign's presets was accepted alone with an interval: each
  // is listed as carried with its own figure (a verdict at 8, a half-range, or none).
  EXPECT_NE(section.find("- **fast.env**: proven alone: none."), std::string::npos) << section;
  EXPECT_NE(section.find("  - carried: `FUSED_ADALN=1` (speed): own gain slower: "),
            std::string::npos)
      << section;
  EXPECT_NE(section.find(
                "  - carried: `FUSED_QK_NORM=1` (speed): own gain 1.029x ± 0.000 (half-range, no "
                "interval)"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("  - carried: `CKPT_LAYERS=8` (memory): own gain not measured alone"),
            std::string::npos)
      << section;
  EXPECT_NE(
      section.find("  - carried: `KERNEL_ROPE=threads=128,vec=2`: a kernel family's parameters"),
      std::string::npos)
      << section;
  EXPECT_NE(section.find("- **fast_80gb.env**: proven alone: none."), std::string::npos) << section;
  // That campaign predates the rounding band: its tolerance switches say the seed band.
  EXPECT_NE(md.find("| no (gated by the seed band) |"), std::string::npos) << md;
}

}  // namespace
}  // namespace sg::agent
