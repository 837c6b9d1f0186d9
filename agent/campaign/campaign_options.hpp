// A campaign's options, grouped by concern, each with its default and flag (the CLI
// declares them once for `tune` and `nightly`: agent/cli/campaign_options.cpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/units.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/runner/executor.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent {

// What every trial runs (all part of the trial key).
struct TrialOptions {
  int micro_batch = 0;   // --micro-batch, the measured one; 0 = the size's default
  int grad_accum = 1;    // --grad-accum
  int steps = 8;         // --steps: the full (confirmation) step budget
  int screen_steps = 0;  // --screen-steps; 0 = max(3, steps / 2)
  std::vector<int> seeds = {0, 1000,
                            2000};  // --seeds: the first runs candidates, all make the band
  int threads = 2;                  // --threads per trainer
  int world_size = 1;       // --trial-world-size: ranks per trial; part of the trial key when > 1
  double deadline_s = 600;  // --trial-timeout
};

// The memory target presets are for, and its budgets.
struct MemoryOptions {
  std::vector<NamedBudget> budgets;  // --memory-budget NAME=SIZE
  int target_micro_batch = 0;        // 0 = the size's default_micro_batch
  int target_world_size = 1;
  int zero_stage = 0;
  // The memory probe runs at the target micro-batch (when it is above the measured one)
  // instead of twice the measured one; a probe that runs out of memory falls back to 2x.
  bool probe_at_target = false;
};

// The gate's tolerance class (docs/controller.md, "The gate").
struct GateOptions {
  double band_factor = kDefaultBandFactor;  // --band-factor: the seed band's allowed multiple
  // The rounding band's relative perturbation (--perturb-eps; 0 = judge by the seed band
  // alone), its allowed multiple, and the confirmation horizon (x --steps).
  double perturb_eps = kDefaultPerturbEps;
  double rounding_factor = kRoundingBandFactor;
  int horizon_factor = kDefaultHorizonFactor;
};

// Speed verdicts (docs/controller.md, "Speed verdicts").
struct SpeedOptions {
  int repeats = 3;      // ABAB pairs before the first speed verdict (--repeats)
  int max_repeats = 8;  // pairs at most while the interval straddles (--max-repeats)
  double min_effect = kDefaultMinEffect;  // the speedup's lower bound must clear 1 + this
  int noise_pairs = 4;                    // A/A baseline pairs measuring the host's noise; 0 = none
};

// The search plan.
struct PlanOptions {
  std::vector<std::string> plan;  // --plan; default_plan() when empty
  int prune_rounds = 0;           // rounds of drops strategy "prune" may take; 0 = until none is
};

// When a campaign stops: the budget is checked before each trainer run.
struct BudgetOptions {
  int trials = 0;      // --budget-trials; 0 = unlimited
  double minutes = 0;  // --budget-minutes; 0 = unlimited
};

struct CampaignOptions {
  std::string trainer, workload, size;
  std::string db_path = "results/speedgate.db";
  std::string runs_dir;         // per-trial logs; default <db dir>/runs
  bool require_resume = false;  // --resume
  bool progress = false;        // a progress line on stderr

  TrialOptions trial;
  MemoryOptions memory;
  GateOptions gate;
  SpeedOptions speed;
  PlanOptions search;
  BudgetOptions budget;
  // Where trials run (--executor local|slurm, GPU slots, parallel trials, Slurm
  // partition and shared directory).
  ExecutorOptions executor;

  nlohmann::json to_json() const;
  // Throws UsageError naming the bad field.
  void validate() const;
};

// Upper bounds of the time options (NaN fails every comparison, so it is refused too).
constexpr double kMaxTrialTimeoutS = 7 * 24 * 3600;  // a week per trial
constexpr double kMaxBudgetMinutes = 366 * 24 * 60;  // a year per campaign

// What the search strategies get of a campaign's options (campaign and nightly alike);
// rank_at_target: the evaluator's probes run at the target micro-batch.
SearchOptions search_options(const CampaignOptions& options, bool rank_at_target);

// The speed rule the campaign's options set (gate/speed_stats.hpp).
SpeedRule speed_rule(const CampaignOptions& options);

}  // namespace sg::agent
