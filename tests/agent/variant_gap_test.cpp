// benchmarks/variant_gap.cpp (speedgate-variant-gap): a campaign's chosen kernel variants
// (preset first, else the fastest accepted evaluation, defaults when the family's
// parameters are unset) against an exhaustive sweep, per family, summed over the
// family's ops; unavailable and never-chosen families are reported, not compared.
#include "benchmarks/variant_gap.hpp"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "agent/protocol/kernel_params.hpp"

#include "agent/protocol/config.hpp"
#include "tests/agent/test_util.hpp"

namespace sg::bench {
namespace {

using nlohmann::json;

json family(const std::string& name, const std::string& sw, bool available,
            const std::string& defaults) {
  json f = {{"name", name},
            {"env", "SG_KERNEL_" + name},
            {"switch", sw},
            {"available", available},
            {"unavailable_reason", available ? "" : "no CUDA in this build"}};
  if (!defaults.empty()) f["defaults"] = defaults;
  return f;
}

json row(const char* variant, json params, double fwdbwd_us) {
  return {{"variant", variant},
          {"params", std::move(params)},
          {"fwd_us", fwdbwd_us / 2},
          {"fwdbwd_us", fwdbwd_us}};
}

// One swept op: its plain ATen row, then its fused rows (parameters, fwd+bwd microseconds).
json op(const char* name, const char* family, double plain_us,
        const std::vector<std::pair<json, double>>& fused) {
  json rows = json::array({row("plain_aten", json::object(), plain_us)});
  for (const auto& [params, us] : fused) rows.push_back(row("fused_cuda", params, us));
  return {{"op", name}, {"family", family}, {"rows", rows}};
}

// ROPE: two ops; threads=128,vec=2 is best in sum (10 + 11 = 21) though not per op.
// CAT: one op. ADALN: swept, never chosen. QKNORM: unavailable in the campaign.
json sweep(const std::string& size = "base") {
  const json t128_v2 = {{"threads", 128}, {"vec", 2}}, t64_v2 = {{"threads", 64}, {"vec", 2}};
  return {{"gpu", "Test GPU"},
          {"shape", {{"workload", "wam"}, {"size", size}, {"micro_batch", 8}}},
          {"ops",
           {op("rope a", "ROPE", 100, {{t128_v2, 10}, {t64_v2, 9}}),
            op("rope b", "ROPE", 100, {{t128_v2, 11}, {t64_v2, 13}}),
            op("cat", "CAT", 50,
               {{{{"threads", 128}, {"rows_per_block", 1}}, 40},
                {{{"threads", 256}, {"rows_per_block", 1}}, 50}}),
            op("gated", "ADALN", 50, {{{{"threads", 128}, {"vec", 4}}, 20}})}}};
}

class VariantGap : public ::testing::Test {
 protected:
  void SetUp() override { db_ = agent::test::make_temp_dir("variantgap") + "/s.db"; }

  // A wam campaign whose manifest has `families` (by default ROPE, CAT and ADALN
  // available, QKNORM not).
  std::int64_t campaign(agent::Store& s, const std::string& size = "base",
                        const json& families = {
                            family("ROPE", "FUSED_ROPE", true, "threads=128,vec=2"),
                            family("CAT", "FAST_CAT", true, "threads=128,rows_per_block=2"),
                            family("ADALN", "FUSED_ADALN", true, "threads=128,vec=4"),
                            family("QKNORM", "FUSED_QK_NORM", false, "threads=256,vec=2")}) {
    agent::CampaignRow c;
    c.workload = "wam";
    c.size = size;
    c.trainer = "/bin/true";
    c.manifest = {{"kernel_families", families}};
    c.options = json::object();
    return s.create_campaign(c);
  }

  void accepted(agent::Store& s, std::int64_t id, const agent::Config& cfg, double speedup) {
    agent::EvaluationRow e;
    e.campaign_id = id;
    e.strategy = "local";
    e.config_key = agent::config_key(cfg);
    e.steps = 3;
    e.disposition = agent::Disposition::accepted;
    e.gate_class = "bitwise";
    e.speedup = speedup;
    s.add_evaluation(e);
  }

  const FamilyGap& of(const GapReport& r, const std::string& name) {
    for (const auto& g : r.families) {
      if (g.family == name) return g;
    }
    throw std::runtime_error("no family " + name);
  }

  std::string db_;
};

TEST_F(VariantGap, PresetChoiceIsComparedWithTheSweepsBestSummedOverOps) {
  agent::Store s(db_);
  const auto id = campaign(s);
  agent::PresetRow p;
  p.campaign_id = id;
  p.name = "fast";
  p.path = "presets/fast.env";
  p.content =
      "# speedgate preset\nSG_FUSED_ROPE=1\nSG_KERNEL_ROPE=vec=2,threads=64\nSG_FAST_CAT=1\n";
  s.add_preset(p);
  // A faster accepted evaluation does not override the preset.
  accepted(s, id, {{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=128,vec=2"}}, 2.0);
  const auto r = variant_gap(s, std::nullopt, sweep());
  EXPECT_EQ(r.campaign_id, id);
  EXPECT_TRUE(r.shapes_match);
  const auto& rope = of(r, "ROPE");
  ASSERT_EQ(rope.status, "compared") << rope.detail;
  EXPECT_EQ(rope.chosen, "threads=64,vec=2");
  EXPECT_EQ(rope.chosen_from, "preset fast");
  EXPECT_EQ(rope.best, "threads=128,vec=2");
  EXPECT_DOUBLE_EQ(rope.chosen_us, 22.0);
  EXPECT_DOUBLE_EQ(rope.best_us, 21.0);
  EXPECT_NEAR(rope.gap_percent, 100.0 / 21.0, 1e-9);
  EXPECT_EQ(rope.ops, (std::vector<std::string>{"rope a", "rope b"}));
  // CAT on without parameters: the manifest's defaults, which the sweep did not measure.
  const auto& cat = of(r, "CAT");
  EXPECT_EQ(cat.status, "params_not_swept");
  EXPECT_EQ(cat.chosen, "rows_per_block=2,threads=128");
  EXPECT_EQ(of(r, "ADALN").status, "not_chosen");
  EXPECT_EQ(of(r, "QKNORM").status, "unavailable");
  EXPECT_NE(of(r, "QKNORM").detail.find("no CUDA"), std::string::npos);
  EXPECT_TRUE(gaps_within_limit(r));  // 4.8 %
  const auto text = render_gap_text(r);
  EXPECT_NE(text.find("| ROPE | compared | threads=64,vec=2 | preset fast | threads=128,vec=2"),
            std::string::npos)
      << text;
  EXPECT_EQ(render_gap_json(r).at("within_limit"), true);
}

// A campaign whose kernel trials ran at micro-batch 32 and a sweep at 8 measure different
// shapes: the report says so.
TEST_F(VariantGap, KernelTrialsAtAnotherMicroBatchAreAShapeMismatch) {
  agent::Store s(db_);
  const auto id = campaign(s);
  accepted(s, id, {{"FUSED_ROPE", "1"}, {"KERNEL_ROPE", "threads=128,vec=2"}}, 1.2);
  const auto r8 = variant_gap(s, id, sweep());
  EXPECT_TRUE(r8.shapes_match) << "no kernel trial and no target: the micro-batch is unknown";
  const auto trial = s.claim_trial([&] {
    agent::TrialRow t;
    t.campaign_id = id;
    t.trial_key = "kernel_timing|ROPE";
    t.purpose = "kernel_timing";
    return t;
  }());
  s.add_kernel_timings({{0, id, trial, "ROPE", "threads=128,vec=2", 32, 5.0, 10.0, true}});
  const auto r = variant_gap(s, id, sweep());
  EXPECT_FALSE(r.shapes_match);
  EXPECT_EQ(r.campaign_shape, "wam/base, micro-batch 32");
  EXPECT_EQ(r.sweep_shape, "wam/base, micro-batch 8");
}

TEST_F(VariantGap, FastestAcceptedEvaluationWhenNoPresetAndGapOverLimitFails) {
  agent::Store s(db_);
  const auto id = campaign(s, "tiny");
  accepted(s, id, {{"FAST_CAT", "1"}, {"KERNEL_CAT", "threads=256,rows_per_block=1"}}, 1.2);
  accepted(s, id, {{"FAST_CAT", "1"}}, 1.1);
  const auto r = variant_gap(s, id, sweep());
  EXPECT_FALSE(r.shapes_match);
  EXPECT_NE(render_gap_text(r).find("shapes differ"), std::string::npos);
  const auto& cat = of(r, "CAT");
  ASSERT_EQ(cat.status, "compared") << cat.detail;
  EXPECT_EQ(cat.chosen, "rows_per_block=1,threads=256");
  EXPECT_NE(cat.chosen_from.find("evaluation"), std::string::npos);
  EXPECT_DOUBLE_EQ(cat.gap_percent, 25.0);
  EXPECT_FALSE(gaps_within_limit(r));
  EXPECT_EQ(render_gap_json(r).at("within_limit"), false);
  EXPECT_EQ(of(r, "ROPE").status, "not_chosen");
}

TEST_F(VariantGap, CpuCampaignReportsEveryFamilyUnavailable) {
  agent::Store s(db_);
  campaign(s, "tiny",
           {family("ROPE", "FUSED_ROPE", false, ""), family("CAT", "FAST_CAT", false, "")});
  const auto r = variant_gap(s, std::nullopt, sweep());
  ASSERT_EQ(r.families.size(), 2u);
  for (const auto& g : r.families) EXPECT_EQ(g.status, "unavailable") << g.family;
  EXPECT_TRUE(gaps_within_limit(r));
}

TEST_F(VariantGap, BadInputNamesTheProblem) {
  agent::Store s(db_);
  EXPECT_THROW(variant_gap(s, std::nullopt, sweep()), std::invalid_argument);  // no campaign
  campaign(s);
  EXPECT_THROW(variant_gap(s, 99, sweep()), std::invalid_argument);
  EXPECT_THROW(variant_gap(s, std::nullopt, json::array()), std::invalid_argument);
  EXPECT_EQ(agent::canonical_kernel_value("vec=2,threads=64"), "threads=64,vec=2");
  EXPECT_THROW(agent::canonical_kernel_value("threads"), std::invalid_argument);
}

}  // namespace
}  // namespace sg::bench
