// The real Evaluator: establishes the preflight and seed band per step budget, gates
// candidates, projects memory and measures speed with paired ABAB repeats. Its trials go
// through the trial service (agent/trial/trial_service.hpp: stored or run, then
// recorded); what they mean, through the judge (agent/trial/judge.hpp).
//
// Parallel dispatch: when the executor can run several trials at once, the trials that do
// not depend on each other (a step budget's preflight and band baselines; the gate runs of
// the candidates a strategy announces through prefetch(), then the memory probes of those
// that pass) run side by side first (TrialService::run_batch); the sequential evaluation
// then finds them finished in the store. Speed pairs always run in the sequential part,
// alone on the host (exclusive requests).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/campaign/campaign.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/memory/projection.hpp"
#include "agent/protocol/result.hpp"
#include "agent/search/evaluator.hpp"
#include "agent/store/store.hpp"
#include "agent/trial/trial_service.hpp"

namespace sg::agent {

class CampaignEvaluator : public Evaluator {
 public:
  CampaignEvaluator(Store& store, std::int64_t campaign_id, const Manifest& manifest,
                    const CampaignOptions& opt);

  Evaluation evaluate(const Config& config, int steps, const std::string& strategy,
                      Measure measure) override;
  // Memory probes run at the target micro-batch (--probe-at-target above --micro-batch), so
  // Measure::target_probe gives a speed.
  bool probes_at_target() const {
    return probe_micro_batch_ == target_micro_batch_ && target_micro_batch_ > micro_batch_;
  }
  void prefetch(const std::vector<Config>& configs, int steps, Measure measure) override;
  // Runs (or finds in the store) one `kernel-trial` at the target micro-batch, alone on
  // the host, and records every variant's time in kernel_timings.
  std::optional<KernelTrialResult> time_kernels(const std::string& family,
                                                const std::vector<std::string>& variants) override;

  // Defined in campaign_finals.cpp.
  int run_finals(const std::vector<Evaluation>& before, int per_budget) override;

  TrialService& trials() { return trials_; }
  int trials_run() const { return trials_.trials_run(); }
  double best_speedup() const { return best_speedup_; }
  std::optional<bool> deterministic() const { return deterministic_; }

 private:
  using Run = TrialRun;
  using Plan = TrialPlan;
  struct Baseline {
    TrialResult s0;
    ToleranceBands bands;  // the seed band, and the rounding band when the trainer can perturb
    std::vector<std::int64_t> trial_ids;
  };
  // A plan of the campaign's measured shape: `config` at `steps` and the first seed.
  Plan plan(const std::string& purpose, const Config& c, int seed, int steps, int micro_batch,
            int repeat, const std::string& paired_with = "", double perturb = 0) const;
  Run run(const std::string& purpose, const Config& c, int seed, int steps, int micro_batch,
          int repeat, const std::string& paired_with = "", double perturb = 0);
  // The baseline at `steps` (campaign_baseline.cpp): preflight, seed band, rounding band
  // and, where speed pairs run at `steps` (with_noise), the host's A/A noise.
  const Baseline& baseline(int steps, bool with_noise = true);
  std::optional<Band> rounding_band(int steps, const TrialResult& s0,
                                    const std::vector<TrialResult>& band_runs,
                                    const TrialResult* preflight_b, std::vector<std::int64_t>& ids);
  void measure_noise_at(int steps);
  // The gate verdict of a run of `config` against the baseline at its steps.
  Verdict gate(const Config& config, const TrialResult& run, const Baseline& base) const;
  // Tolerance configurations at the full step budget: the same verdict at the horizon.
  Verdict confirm_at_horizon(const Config& config, int steps);
  // Two finished runs as a speed pair (base side `a`) and its row (campaign_speed.cpp);
  // nullopt when a run reported no positive step seconds.
  // REQUIRES: both runs have a result.
  struct PairOfRuns {
    SpeedPair pair;
    SpeedPairRow row;
  };
  std::optional<PairOfRuns> pair_of(const Run& a, const Run& b, const std::string& pair, int steps,
                                    int repeat) const;
  // The ABAB pairs of `config` (campaign_speed.cpp): sequential until the interval decides
  // or --max-repeats; fills e's speed fields, trial ids and `pairs`.
  struct SpeedOutcome {
    std::optional<SpeedInterval> interval;  // nullopt: a run failed (e has the failure)
    std::vector<SpeedPairRow> pairs;
  };
  SpeedOutcome measure_speed(const Config& config, int steps, const Run& cand,
                             const std::optional<Run>& first_base, Evaluation& e);
  // Projects the peak for `c` from its run at the measured micro-batch plus a probe
  // at twice that (--probe-at-target: at the target, and at twice the measured one when
  // the target runs out of memory); stores the projection. nullopt + failure when the
  // probe failed. `probe` gets the probe's run (the failed one, or the one projected from)
  // and `probe_mb` its micro-batch.
  std::optional<Projection> project(const Config& c, const TrialResult& at_mb,
                                    std::vector<std::int64_t>& ids, Run* probe, int* probe_mb);
  // The baseline's evaluation (empty configuration).
  Evaluation evaluate_baseline(Evaluation e, const Baseline& base);
  // After the gate: the memory probe (unless speed_pairs); false when e is finished (a
  // failed probe, or pruned for memory).
  bool probe_memory(const Config& config, const Run& cand, Measure measure, Evaluation& e,
                    std::optional<Projection>& p);
  void progress(const std::string& what) const;
  Evaluation finish(Evaluation e);

  Store& store_;
  std::int64_t campaign_id_;
  const Manifest& manifest_;
  CampaignOptions opt_;
  TrialService trials_;
  int micro_batch_ = 1, target_micro_batch_ = 1;
  int probe_micro_batch_ = 2;  // the target with --probe-at-target, else 2 x micro_batch_
  std::map<int, Baseline> baselines_;
  std::set<int> noise_measured_;  // step budgets whose A/A noise pairs ran
  bool seed_band_warned_ = false;
  std::optional<bool> deterministic_;
  double baseline_projected_ = 0;
  double baseline_target_samples_per_s_ = 0;  // the baseline's probe at the target; 0 = none
  double best_speedup_ = 1.0;
};

// What the trial service gets of a campaign's options.
TrialSettings trial_settings(const CampaignOptions& opt);

}  // namespace sg::agent
