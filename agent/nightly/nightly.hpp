// `speedgate nightly`: one time-budgeted campaign that a team schedules every night.
//  1. re-measures the baseline in a new campaign row (a killed night is resumed by a
//     rerun within kResumeWithinHours) and compares the environment fingerprint with
//     the previous campaign's; a change is logged and stored in nightly_runs, and
//     results from another environment are never reused;
//  2. re-verifies the current presets against tonight's baseline: each must pass the
//     gate, fit its budget and keep speedup >= regression_limit x its claim, else it
//     is demoted (DB + README.md; the .env is left as it is) and the run fails
//     (exit 1). A preset whose fingerprint names another device kind than tonight's
//     baseline is skipped: not verified, demoted or rewritten, and the directory's
//     README.md is left as it is;
//  3. explores with the campaign's plan for the rest of the budget, warm-started:
//     a trial identical to a finished one of an earlier campaign in the same
//     environment (same key: purpose, config, seed, steps, micro-batch, repeat) is
//     copied, not re-run;
//  4. writes a new <budget>.env only where tonight's best beats the current preset by
//     more than kNoiseThreshold, and records every live preset under tonight's
//     campaign so the dashboard's trend has one point per night.
// The budget is checked before each trainer run: the run in flight finishes and is
// recorded, nothing new starts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/campaign/campaign.hpp"
#include "agent/protocol/manifest.hpp"

namespace sg::agent::nightly {

// A re-verified preset must keep at least this fraction of the speedup it claimed.
constexpr double kRegressionLimit = 0.95;

struct NightlyOptions {
  // The campaign (workload, size, trainer, budgets, steps, ...). One of
  // budget_minutes / budget_trials must be set.
  CampaignOptions campaign;
  // Where the current presets live and new ones are written (README.md included).
  // Never the committed presets/ by default: a night on one host must not rewrite
  // presets another device measured.
  std::string presets_dir = "results/presets";
  double regression_limit = kRegressionLimit;

  // Throws UsageError naming the bad field.
  void validate() const;
};

struct PresetCheck {
  std::string name, path, config_key;
  // kept | demoted | unverified (budget spent first) | skipped (measured on another
  // device kind than this host: neither verified, demoted nor rewritten)
  std::string verdict;
  std::string reason;
  double recorded_speedup = 0, measured_speedup = 0, projected_peak_bytes = 0;
  std::optional<std::int64_t> evaluation_id;
};

struct PresetWrite {
  std::string name, path, config_key, replaced_config_key;
  double speedup = 0, replaced_speedup = 0;
};

struct NightlyReport {
  std::int64_t campaign_id = 0;
  bool resumed = false;
  bool environment_changed = false;
  std::optional<std::int64_t> previous_campaign_id;
  nlohmann::json environment_diff = nlohmann::json::object();
  std::vector<PresetCheck> checks;
  std::vector<PresetWrite> written;
  std::vector<std::string> notes;  // budgets left as they are, and why
  int trials_run = 0, trials_reused = 0;
  bool budget_spent = false;
  std::string failure;  // non-empty: the night could not be completed (baseline, budget)

  bool any_demoted() const;
  // 0 when every preset was re-verified and kept; 1 on a demotion or a night that
  // could not verify its presets (schedulers alert on it).
  int exit_code() const;
  nlohmann::json to_json() const;
};

NightlyReport run_nightly(const NightlyOptions& options, const Manifest& manifest);

}  // namespace sg::agent::nightly
