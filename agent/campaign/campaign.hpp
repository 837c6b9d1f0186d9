// A tuning campaign: manifest -> store -> preflight and baseline band -> search
// plan -> Pareto frontier. One driver (drive_campaign) for `tune` and `nightly`; `tune`
// resumes the latest unfinished campaign for the same workload, size and trainer manifest
// (nothing finished is re-run).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/campaign/campaign_options.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

// Seconds without a heartbeat after which a RUNNING trial is stale.
constexpr double kStaleAfterS = 120;

// Fills the defaults (--screen-steps, --plan), validates the options, refuses an unknown
// workload or size and an impossible executor, creates the database's directory and names
// the runs directory. Throws UsageError; writes nothing else.
CampaignOptions with_defaults(CampaignOptions opt);
CampaignOptions prepare_campaign(const CampaignOptions& opt, const Manifest& manifest);

// A new campaign's row: what it tunes (workload, size), with which trainer and manifest,
// and its options as stored (CampaignOptions::to_json).
CampaignRow new_campaign_row(const CampaignOptions& opt, const Manifest& manifest);

class CampaignEvaluator;

// One campaign in progress, as the hooks see it.
struct CampaignRun {
  Store& store;
  std::int64_t id;
  const Manifest& manifest;
  const CampaignOptions& options;
  CampaignEvaluator& evaluator;
  SearchContext& search;
};

// What a caller adds to the one campaign driver: `tune` its resume rule and shared claims,
// `nightly` tonight's campaign row, its warm start and its re-verification.
struct CampaignHooks {
  // Creates the campaign row or finds the one to resume. Required.
  std::function<std::int64_t(Store&)> open;
  // Held from after `open` until the driver returns (tune: the shared-claims keeper).
  std::function<std::shared_ptr<void>(Store&, std::int64_t campaign_id)> hold;
  // Before each trial, with its purpose and key (TrialService::BeforeTrial).
  std::function<void(const std::string& purpose, const std::string& key)> before_trial;
  // After the baseline, before the plan; false skips the plan.
  std::function<bool(CampaignRun&)> after_baseline;
};

struct CampaignOutcome {
  std::int64_t id = 0;
  bool baseline_measured = false;
  bool budget_spent = false;
  std::string gate_failure;  // non-empty: a baseline could not be established (GateFailure's text)
  int trials_run = 0;
  double best_speedup = 1.0;
};

// The driver: opens the campaign, re-queues trials a dead controller left, measures the
// baseline, calls after_baseline, runs the plan until it ends or the budget is spent and
// stores the frontier. A GateFailure is recorded (the campaign's determinism note) and
// returned, not thrown; a stop signal leaves the campaign unfinished (throws).
CampaignOutcome drive_campaign(Store& store, const CampaignOptions& opt, const Manifest& manifest,
                               const CampaignHooks& hooks);

// The accepted evaluations at `steps` as frontier points (ids: evaluation ids).
std::vector<FrontierPoint> accepted_points(const std::vector<EvaluationRow>& evals, int steps);

// Runs (or resumes) a campaign; returns its id. Throws UsageError for bad input,
// GateFailure when the baseline itself cannot be established.
std::int64_t run_campaign(const CampaignOptions& options, const Manifest& manifest);

}  // namespace sg::agent
