// What the campaign tests against the fake trainer (tests/agent/data/fake_trainer.py)
// share: its options, a campaign in a temp dir of its own, and a campaign with its
// presets emitted.
#pragma once
#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/campaign/campaign.hpp"
#include "agent/common/files.hpp"
#include "agent/presets/emit.hpp"
#include "agent/report/summary.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent::test {

constexpr double GiB = 1024.0 * 1024 * 1024;

// wam/tiny of the fake trainer with its DB in `dir`: budgets fast (141 GiB) and
// fast_80gb, 3 steps, two seeds, two speed pairs and no noise pairs.
inline CampaignOptions fake_options(const std::string& dir) {
  CampaignOptions o;
  o.trainer = fake_trainer();
  o.workload = "wam";
  o.size = "tiny";
  o.db_path = dir + "/sg.db";
  o.memory.budgets = {{"fast", static_cast<std::int64_t>(141 * GiB)},
                      {"fast_80gb", static_cast<std::int64_t>(80 * GiB)}};
  o.memory.target_micro_batch = 32;
  o.trial.steps = 3;
  o.trial.screen_steps = 3;  // one step budget: halving is covered by the replay tests
  o.trial.seeds = {0, 1000};
  o.speed.repeats = 2;  // the fewest pairs an interval can stand on; the fake's times are exact
  o.speed.max_repeats = 2;
  o.speed.noise_pairs = 0;
  return o;
}

// A campaign of the fake trainer in a temp dir of its own (removed with it): `options`
// are fake_options() with `plan` (empty: the default plan) until run() is called.
struct FakeCampaign {
  explicit FakeCampaign(const std::string& tag, std::vector<std::string> plan = {})
      : dir(make_temp_dir(tag)), options(fake_options(dir)) {
    spdlog::set_level(spdlog::level::warn);
    if (!plan.empty()) options.search.plan = std::move(plan);
  }
  ~FakeCampaign() { std::filesystem::remove_all(dir); }
  FakeCampaign(const FakeCampaign&) = delete;
  FakeCampaign& operator=(const FakeCampaign&) = delete;

  std::int64_t run() const { return run_campaign(options, describe_trainer(options.trainer)); }

  std::string dir;
  CampaignOptions options;
};

// The number of kernel timing trials of campaign `cid`.
inline int kernel_trial_count(Store& s, std::int64_t cid) {
  int n = 0;
  for (const auto& t : s.trials(cid)) n += t.purpose == "kernel_timing" ? 1 : 0;
  return n;
}

// A --plan stack,prune campaign of the combinable fake manifest in `dir`: (campaign id, DB).
inline std::pair<std::int64_t, std::string> stack_then_prune(const std::string& dir,
                                                             bool probe_at_target) {
  spdlog::set_level(spdlog::level::warn);
  ScopedEnv combinable("FAKE_MANIFEST", "combinable");
  CampaignOptions o = fake_options(dir);
  o.search.plan = {"stack", "prune"};
  o.memory.probe_at_target = probe_at_target;
  return {run_campaign(o, describe_trainer(o.trainer)), o.db_path};
}

// A fake campaign with `plan` (memory probes at the target when `probe`) and its presets
// emitted; `env` is set for the campaign only. What the target tests look at.
struct EmittedCampaign {
  Config fast, fast_80gb;                 // the presets' configurations
  std::string fast_file, fast_80gb_file;  // and their files
  std::vector<TargetFinalRow> finals;
  std::vector<std::string> final_trial_keys;  // the finals' runs (final_base, final_cand)
  nlohmann::json summary;                     // speedgate report's
};
inline EmittedCampaign run_and_emit(const std::string& name, std::vector<std::string> plan,
                                    bool probe,
                                    const std::map<std::string, std::string>& env = {}) {
  const std::string dir = make_temp_dir(name);
  std::vector<std::unique_ptr<ScopedEnv>> scoped;
  for (const auto& [k, v] : env) scoped.push_back(std::make_unique<ScopedEnv>(k, v));
  CampaignOptions o = fake_options(dir);
  o.search.plan = std::move(plan);
  o.memory.probe_at_target = probe;
  const auto cid = run_campaign(o, describe_trainer(o.trainer));
  Store s(o.db_path);
  const auto r = emit_presets(s, cid, dir + "/presets");
  EmittedCampaign out;
  for (const auto& p : r.summary["presets"]) {
    if (!p.value("written", false)) continue;
    const bool fast = p["name"] == "fast";
    (fast ? out.fast : out.fast_80gb) = p["config"].get<Config>();
    (fast ? out.fast_file : out.fast_80gb_file) =
        read_file(p["path"].get<std::string>()).value_or("");
  }
  out.finals = s.target_finals(cid);
  for (const auto& t : s.trials(cid)) {
    if (t.purpose == "final_base" || t.purpose == "final_cand")
      out.final_trial_keys.push_back(t.trial_key);
  }
  out.summary = campaign_summary(s, cid);
  std::filesystem::remove_all(dir);
  return out;
}

inline std::string ckpt_layers(const Config& c) {
  return c.count("CKPT_LAYERS") ? c.at("CKPT_LAYERS") : "-1";
}

}  // namespace sg::agent::test
