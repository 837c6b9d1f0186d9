// A tuning campaign: manifest -> store -> preflight and baseline band -> search
// plan -> Pareto frontier. Resumes the latest unfinished campaign for the same
// workload, size and trainer manifest (nothing finished is re-run).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/units.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/runner/executor.hpp"
#include "agent/search/strategy.hpp"

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

// Runs (or resumes) a campaign; returns its id. Throws UsageError for bad input,
// GateFailure when the baseline itself cannot be established.
std::int64_t run_campaign(const CampaignOptions& options, const Manifest& manifest);

}  // namespace sg::agent
