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

#include <nlohmann/json.hpp>

#include "agent/common/units.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/runner/executor.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

struct CampaignOptions {
  std::string trainer, workload, size, db_path = "results/speedgate.db";
  std::string runs_dir;  // per-trial logs; default <db dir>/runs
  std::vector<NamedBudget> budgets;
  int target_micro_batch = 0;  // 0 = the size's default_micro_batch
  int target_world_size = 1;
  int zero_stage = 0;
  int micro_batch = 0;         // measured micro-batch; 0 = the size's default
  int grad_accum = 1;
  int steps = 8;               // full (confirmation) step budget
  int screen_steps = 0;        // 0 = max(3, steps / 2)
  // The memory probe runs at the target micro-batch (when it is above the measured one)
  // instead of twice the measured one; a probe that runs out of memory falls back to 2x.
  bool probe_at_target = false;
  std::vector<int> seeds = {0, 1000, 2000};
  int threads = 2;
  int repeats = 3;             // ABAB pairs before the first speed verdict (--repeats)
  int max_repeats = 8;         // pairs at most while the interval straddles (--max-repeats)
  double min_effect = kDefaultMinEffect;  // the speedup's lower bound must clear 1 + this
  int noise_pairs = 4;         // A/A baseline pairs measuring the host's noise; 0 = none
  // Tolerance class: the rounding band's relative perturbation (--perturb-eps; 0 = judge by
  // the seed band alone), its allowed multiple, and the confirmation horizon (x --steps).
  double perturb_eps = kDefaultPerturbEps;
  double rounding_factor = kRoundingBandFactor;
  int horizon_factor = kDefaultHorizonFactor;
  int prune_rounds = 0;        // rounds of drops strategy "prune" may take; 0 = until none is
  double band_factor = 2.0;
  int budget_trials = 0;       // 0 = unlimited
  double budget_minutes = 0;   // 0 = unlimited
  bool require_resume = false;
  std::vector<std::string> plan;  // default_plan() when empty
  double trial_deadline_s = 600;
  bool progress = false;       // a progress line on stderr
  // Where trials run (--executor local|slurm, GPU slots, parallel trials, Slurm
  // partition and shared directory) and how many data-parallel ranks each has.
  ExecutorOptions executor;
  int trial_world_size = 1;    // ranks per trial (--trial-world-size); part of the trial key when > 1

  nlohmann::json to_json() const;
  // Throws UsageError naming the bad field.
  void validate() const;
};

// Upper bounds of the time options (NaN fails every comparison, so it is refused too).
constexpr double kMaxTrialTimeoutS = 7 * 24 * 3600;  // a week per trial
constexpr double kMaxBudgetMinutes = 366 * 24 * 60;  // a year per campaign

// Seconds without a heartbeat after which a RUNNING trial is stale.
constexpr double kStaleAfterS = 120;

// What the search strategies get of a campaign's options (campaign and nightly alike);
// rank_at_target: the evaluator's probes run at the target micro-batch.
SearchOptions search_options(const CampaignOptions& options, bool rank_at_target);

// The speed rule the campaign's options set (gate/speed_stats.hpp).
SpeedRule speed_rule(const CampaignOptions& options);

// Fills the defaults (--screen-steps, --plan), validates the options, refuses an unknown
// workload or size and an impossible executor, creates the database's directory and names
// the runs directory. Throws UsageError; writes nothing else.
CampaignOptions with_defaults(CampaignOptions opt);
CampaignOptions prepare_campaign(const CampaignOptions& opt, const Manifest& manifest);

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
