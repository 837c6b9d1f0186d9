// Campaigns of the fake trainer that look at the target micro-batch: memory probes there,
// prune comparing its drops by them, presets ranked by them, and the finals that pair each
// budget's leaders at the target.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "agent/protocol/config.hpp"
#include "campaign_support.hpp"
#include "store_sql.hpp"

namespace sg::agent {
namespace {

using test::ckpt_layers;
using test::run_and_emit;
using test::stack_then_prune;

// --probe-at-target: the memory probe runs at the target micro-batch where it fits the
// device, and falls back to twice the measured micro-batch where it runs out of memory.
// The fake device holds 60 GiB: the default at 32 needs 86.5 GiB, CKPT_LAYERS=2 54.5 GiB.
TEST(Campaign, ProbeAtTargetWhereItFitsElseAtTwiceTheMeasuredBatch) {
  test::FakeCampaign c("probe_target", {"screen"});
  test::ScopedEnv small("FAKE_MANIFEST", "small");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "60");
  c.options.memory.probe_at_target = true;
  auto cid = c.run();
  Store s(c.options.db_path);
  std::map<std::string, std::vector<int>> probes;  // config -> probed micro-batches
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "memory_probe") probes[t.config_key].push_back(t.micro_batch);
  }
  EXPECT_EQ(probes[""], (std::vector<int>{32, 4}))
      << "the default does not fit at 32: probed again at 4";
  EXPECT_EQ(probes["CKPT_LAYERS=2"], (std::vector<int>{32})) << "CKPT_LAYERS=2 fits at 32";
  auto points = [&](const std::string& key) {
    std::vector<int> mbs;
    const auto rows = s.projections(cid, key);  // alive while its JSON is iterated
    for (const auto& pt : rows.at(0).inputs.at("points"))
      mbs.push_back(pt.at("micro_batch").get<int>());
    return mbs;
  };
  EXPECT_EQ(points(""), (std::vector<int>{2, 4}));
  EXPECT_EQ(points("CKPT_LAYERS=2"), (std::vector<int>{2, 32}));
  // Measured at the target: the stored error compares the projection with that run.
  const auto row = s.projections(cid, "CKPT_LAYERS=2").at(0);
  ASSERT_TRUE(row.relative_error.has_value());
  EXPECT_NEAR(*row.relative_error, 0.0, 1e-9);
  for (const auto& e : s.evaluations(cid)) {
    if (e.config_key == "CKPT_LAYERS=2" || e.config_key.empty())
      EXPECT_NE(e.disposition, Disposition::oom) << e.config_key;
  }
  // Part of the campaign's options (and so of resume); absent when off.
  EXPECT_EQ(s.campaign(cid)->options.value("probe_at_target", false), true);
}

// With --probe-at-target prune compares its drops by their probes at the target (gate run
// + probe, no speed pair) and pairs only the drop it takes.
TEST(Campaign, PruneComparesDropsByTheirProbesAtTheTarget) {
  const std::string dir = test::make_temp_dir("prune_target");
  const auto [cid, db] = stack_then_prune(dir, /*probe_at_target=*/true);
  Store s(db);
  std::map<std::string, EvaluationRow> evals;  // the last row of each configuration
  for (const auto& e : s.evaluations(cid)) evals[e.config_key] = e;
  const std::string taken = "FAST_MISS=1,TEXT_CACHE=1,WORKERS=4", left = "SLOWER=1,WORKERS=4";
  ASSERT_TRUE(evals.count(taken) && evals.count(left));
  EXPECT_EQ(evals.at(taken).disposition, Disposition::accepted);
  EXPECT_NEAR(evals.at(taken).speedup, 1.30 * 1.10 * 1.15, 1e-9) << "paired once taken";
  EXPECT_TRUE(std::isnan(evals.at(left).speedup)) << "a drop is not paired";
  EXPECT_GT(evals.at(left).projected_peak_bytes, 0) << "its probe ran";
  EXPECT_NE(evals.at(left).reason.find("unpaired"), std::string::npos) << evals.at(left).reason;
  std::map<std::string, int> pairs;  // speed pairs' baseline runs by the configuration they pair
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "speed_base") pairs[t.trial_key.substr(t.trial_key.rfind('|') + 1)]++;
  }
  EXPECT_EQ(pairs[left], 0);
  EXPECT_EQ(pairs[taken], 2);
  // Only a drop that was taken may become a preset, even where a drop left behind had the
  // fastest probe at the target (noise, here written into its probe).
  {
    SQLite::Statement up(raw_db(s),
                         "UPDATE trials SET samples_per_s = samples_per_s * 10 "
                         "WHERE purpose = 'memory_probe' AND config_key = ?");
    up.bind(1, left);
    ASSERT_EQ(up.exec(), 1);
  }
  const EmitResult presets = emit_presets(s, cid, dir + "/presets");
  ASSERT_FALSE(presets.summary.at("presets").empty());
  for (const auto& p : presets.summary.at("presets")) {
    EXPECT_NE(config_key(p.at("config").get<Config>()), left) << p.dump();
  }
  std::filesystem::remove_all(dir);
}

// --plan stack,prune (how the H200 campaign starts): every switch of the combinable manifest
// passes the gate together, so the stack holds SLOWER (0.97x); prune drops it and the
// memory values are tried on the pruned combination, whose points the presets then pick.
TEST(Campaign, StackThenPruneDropsTheSlowerMemberBeforeThePresets) {
  const std::string dir = test::make_temp_dir("stack_prune");
  const auto [cid, db] = stack_then_prune(dir, /*probe_at_target=*/false);
  Store s(db);
  std::map<std::string, EvaluationRow> evals;
  for (const auto& e : s.evaluations(cid)) evals[e.config_key] = e;
  ASSERT_TRUE(evals.count("FAST_MISS=1,SLOWER=1,TEXT_CACHE=1,WORKERS=4")) << "the stack";
  ASSERT_TRUE(evals.count("FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"));
  const EvaluationRow& pruned = evals.at("FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  EXPECT_EQ(pruned.strategy, "prune");
  EXPECT_EQ(pruned.disposition, Disposition::accepted);
  EXPECT_NEAR(pruned.speedup, 1.30 * 1.10 * 1.15, 1e-9);
  EXPECT_TRUE(evals.count("SLOWER=1,WORKERS=4"))
      << "TEXT_CACHE dropped with FAST_MISS, which requires it";
  // Drops are compared without their memory probe; the one taken is probed afterwards (its
  // gate and speed trials are reused: one probe trial more, nothing else).
  EXPECT_TRUE(std::isnan(evals.at("SLOWER=1,WORKERS=4").projected_peak_bytes))
      << "a drop left behind";
  EXPECT_GT(pruned.projected_peak_bytes, 0) << "the drop taken";
  std::map<std::string, std::map<std::string, int>> runs;  // config -> purpose -> trials
  for (const auto& t : s.trials(cid)) runs[t.config_key][t.purpose]++;
  EXPECT_EQ(runs["SLOWER=1,WORKERS=4"].count("memory_probe"), 0u);
  EXPECT_EQ(runs["FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"]["memory_probe"], 1);
  EXPECT_EQ(runs["FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"]["candidate"], 1);
  EXPECT_FALSE(evals.count("CKPT_LAYERS=2,FAST_MISS=1,SLOWER=1,TEXT_CACHE=1,WORKERS=4"))
      << "the stack leaves its memory values to prune, which comes after it in the plan";
  for (const char* key : {"CKPT_LAYERS=2,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4",
                          "CKPT_LAYERS=4,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4"}) {
    ASSERT_TRUE(evals.count(key)) << key;
    EXPECT_EQ(evals.at(key).strategy, "prune") << key;
  }
  EmitResult presets = emit_presets(s, cid, dir + "/presets");
  ASSERT_TRUE(presets.all_budgets_met);
  std::map<std::string, std::string> picked;  // budget -> config key
  for (const auto& p : presets.summary.at("presets")) {
    picked[p.at("name").get<std::string>()] = config_key(p.at("config").get<Config>());
  }
  EXPECT_EQ(picked["fast"], "FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  EXPECT_EQ(picked["fast_80gb"], "CKPT_LAYERS=2,FAST_MISS=1,TEXT_CACHE=1,WORKERS=4");
  std::filesystem::remove_all(dir);
}

// With --probe-at-target the presets rank by the probes' samples/s at the target over the
// baseline's: on the stack, CKPT_LAYERS=4 is slower than =2 at the measured micro-batch but
// faster at 32 (FAKE_TARGET_SPEED), so fast_80gb takes =4 and says why; a campaign without
// the probes takes =2.
TEST(Campaign, PresetsRankByThroughputAtTheTargetWhereProbedThere) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB",
                         "100");  // everything fits at 32: every probe runs there
  test::ScopedEnv target("FAKE_TARGET_SPEED", "CKPT_LAYERS=4:1.2");
  const auto by_target = run_and_emit("rank_at_target", {"stack"}, true);
  EXPECT_EQ(ckpt_layers(by_target.fast_80gb), "4");
  EXPECT_NE(by_target.fast_80gb_file.find("# ranked at the target: "), std::string::npos)
      << by_target.fast_80gb_file;
  EXPECT_NE(by_target.fast_80gb_file.find("at micro-batch 32 (memory probes)"), std::string::npos)
      << by_target.fast_80gb_file;
  const auto by_campaign = run_and_emit("rank_by_campaign", {"stack"}, false);
  EXPECT_EQ(ckpt_layers(by_campaign.fast_80gb), "2");
  EXPECT_EQ(by_campaign.fast_80gb_file.find("ranked"), std::string::npos)
      << by_campaign.fast_80gb_file;
}

// The `finals` strategy pairs each budget's leaders at the target and presets rank by those
// pairs: CKPT_LAYERS=2's memory probe is lucky (FAKE_LUCKY_ONCE, 1.5x once), so the probes
// rank =2 over =4 for fast_80gb although =4 is faster at 32 in every later run. Without
// finals fast_80gb takes =2; with them =4, its header names the paired finals, the report
// lists them, and every finalist's target_finals row holds three accepted rounds.
TEST(Campaign, FinalsPairTheLeadersAtTheTargetAndOutrankALuckyProbe) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "100");
  test::ScopedEnv target("FAKE_TARGET_SPEED", "CKPT_LAYERS=4:1.2");
  const std::string markers = test::make_temp_dir("lucky_markers");  // one marker file per campaign
  const auto lucky = [&](const std::string& name) {
    return std::map<std::string, std::string>{
        {"FAKE_LUCKY_ONCE", "CKPT_LAYERS=2:1.5:" + markers + "/" + name}};
  };
  const auto probes_only = run_and_emit("no_finals", {"stack"}, true, lucky("no_finals"));
  EXPECT_EQ(ckpt_layers(probes_only.fast_80gb), "2");  // the lucky probe decides
  EXPECT_TRUE(probes_only.finals.empty());
  const auto with_finals = run_and_emit("finals", {"stack", "finals"}, true, lucky("finals"));
  EXPECT_EQ(ckpt_layers(with_finals.fast_80gb), "4");
  EXPECT_NE(with_finals.fast_80gb_file.find("(paired finals, 3 rounds)"), std::string::npos)
      << with_finals.fast_80gb_file;
  std::set<std::string> budgets;
  std::map<std::string, double> ckpt_speedup;  // fast_80gb's finalists by CKPT_LAYERS
  for (const auto& f : with_finals.finals) {
    budgets.insert(f.budget_name);
    EXPECT_EQ(f.disposition, Disposition::accepted) << f.config_key << ": " << f.reason;
    EXPECT_EQ(f.micro_batch, 32);
    EXPECT_EQ(f.rounds, 3);
    EXPECT_EQ(f.trial_ids.size(), 6u);  // per round: the baseline and the finalist
    if (f.budget_name == "fast_80gb")
      ckpt_speedup[config_from_key(f.config_key).at("CKPT_LAYERS")] = f.speedup;
  }
  EXPECT_EQ(budgets, (std::set<std::string>{"fast", "fast_80gb"}));
  ASSERT_EQ(ckpt_speedup.size(), 2u);  // fast_80gb's two finalists
  EXPECT_NEAR(ckpt_speedup.at("4") / ckpt_speedup.at("2"), 1.2 * 0.85 / 0.90,
              1e-3);  // paired: the luck is gone
  EXPECT_EQ(with_finals.summary["finals"].size(), with_finals.finals.size());
  EXPECT_GT(with_finals.summary["trials"]["by_purpose"].value("final_cand", 0), 0);
  // Both sides' keys name the pool, so runs are reused (resume, nightly warm start) with
  // the rounds they were paired in, or not at all.
  ASSERT_EQ(with_finals.final_trial_keys.size(), 9u);  // 3 rounds x (baseline + 2 finalists)
  for (const auto& key : with_finals.final_trial_keys)
    EXPECT_NE(key.find("|finals:"), std::string::npos) << key;
  std::filesystem::remove_all(markers);
}

// Round 0 of finals re-gates a bitwise finalist at the target: the bitwise stack
// (SLOWER, TEXT_CACHE, WORKERS) leads fast at 32 (FAST_MISS, in every other stack, is made
// slow there), but with FAKE_TARGET_DRIFT its runs at 32 change the loss bits. Its finals
// row is gate_failed and no preset takes it: fast falls back to the defaults (the paired
// baseline beats the tolerance stack at 32).
TEST(Campaign, AFinalistNotBitwiseAtTheTargetIsLeftOutOfEveryPreset) {
  spdlog::set_level(spdlog::level::warn);
  test::ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  test::ScopedEnv device("FAKE_DEVICE_GIB", "100");
  test::ScopedEnv target("FAKE_TARGET_SPEED", "FAST_MISS=1:0.5");
  const std::string bitwise_stack = "SLOWER=1,TEXT_CACHE=1,WORKERS=4";
  EXPECT_EQ(config_key(run_and_emit("no_target_drift", {"stack", "finals"}, true).fast),
            bitwise_stack);
  const auto drift = run_and_emit("target_drift", {"stack", "finals"}, true,
                                  {{"FAKE_TARGET_DRIFT", "TEXT_CACHE=1"}});
  EXPECT_TRUE(drift.fast.empty());
  EXPECT_NE(drift.fast_file.find(
                "# no finalist beat the baseline paired at the target micro-batch: all defaults"),
            std::string::npos)
      << drift.fast_file;
  bool regated = false;
  for (const auto& f : drift.finals) {
    if (f.config_key != bitwise_stack) continue;
    regated = true;
    EXPECT_EQ(f.disposition, Disposition::gate_failed);
    EXPECT_NE(f.reason.find("not bitwise the baseline at micro-batch 32"), std::string::npos)
        << f.reason;
  }
  EXPECT_TRUE(regated);
}

}  // namespace
}  // namespace sg::agent
