// The real Evaluator: runs trials through an executor (memoised in the store by
// trial key, so a resumed campaign re-uses every finished trial), establishes the
// preflight and seed band per step budget, gates candidates, projects memory and
// measures speed with paired ABAB repeats.
//
// Parallel dispatch: when the executor can run several trials at once, the trials
// that do not depend on each other (a step budget's preflight and band baselines;
// the gate runs of the candidates a strategy announces through prefetch(), then the
// memory probes of those that pass) run side by side first, each worker thread on its
// own Store connection (SQLite serialises the writes: WAL, BEGIN IMMEDIATE). The
// sequential evaluation then finds them finished in the store. Speed pairs always
// run in the sequential part, alone on the host (exclusive requests).
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/memory/projection.hpp"
#include "agent/runner/executor.hpp"
#include "agent/protocol/result.hpp"
#include "agent/campaign/campaign.hpp"
#include "agent/search/evaluator.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

class CampaignEvaluator : public Evaluator {
 public:
  CampaignEvaluator(Store& store, std::int64_t campaign_id, const Manifest& manifest, const CampaignOptions& opt);

  Evaluation evaluate(const Config& config, int steps, const std::string& strategy, Measure measure) override;
  // Memory probes run at the target micro-batch (--probe-at-target above --micro-batch), so
  // Measure::target_probe gives a speed.
  bool probes_at_target() const { return probe_micro_batch_ == target_micro_batch_ && target_micro_batch_ > micro_batch_; }
  void prefetch(const std::vector<Config>& configs, int steps, Measure measure) override;
  // Runs (or finds in the store) one `kernel-trial` at the target micro-batch, alone on
  // the host, and records every variant's time in kernel_timings.
  std::optional<KernelTrialResult> time_kernels(const std::string& family,
                                                const std::vector<std::string>& variants) override;

  // Defined in campaign_finals.cpp.
  int run_finals(const std::vector<Evaluation>& before, int per_budget) override;

  Executor& executor() { return *executor_; }

  int trials_run() const { return trials_run_; }
  double best_speedup() const { return best_speedup_; }
  std::optional<bool> deterministic() const { return deterministic_; }

  // Warm start (speedgate nightly, agent/nightly/): called before each trial with its
  // purpose and key; it may copy an identical finished trial of an earlier campaign
  // into this one, which run() then uses instead of running the trainer.
  using WarmStart = std::function<void(const std::string& purpose, const std::string& trial_key)>;
  void set_warm_start(WarmStart w) { warm_start_ = std::move(w); }

 private:
  struct Run {
    std::int64_t trial_id = 0;
    std::optional<Disposition> failure;
    std::string reason;
    std::optional<TrialResult> result;
  };
  struct Baseline {
    TrialResult s0;
    ToleranceBands bands;  // the seed band, and the rounding band when the trainer can perturb
    std::vector<std::int64_t> trial_ids;
  };

  struct Plan {
    std::string purpose;
    Config config;
    int seed = 0, steps = 0, micro_batch = 1, repeat = 0;
    std::string paired_with;
    std::optional<KernelTrialSpec> kernel;  // a kernel trial (purpose kernel_timing)
    double perturb = 0;                     // > 0: a rounding-band run (--perturb)
  };
  std::string key_of(const Plan& p) const;
  Run run(const std::string& purpose, const Config& c, int seed, int steps, int micro_batch, int repeat,
          const std::string& paired_with = "", double perturb = 0);
  // The stored outcome of a finished trial with this key, if any.
  std::optional<Run> stored(Store& store, const std::string& key);
  // Claims, runs and records one trial through `store` (the caller's connection).
  Run execute(Store& store, const Plan& p, const std::string& key);
  // Runs the plans that are not finished yet side by side (no-op when the executor
  // runs one trial at a time); the outcomes land in the store.
  void run_batch(const std::vector<Plan>& plans);
  bool budget_left(int more) const;
  // The baseline at `steps` (campaign_baseline.cpp): preflight, seed band, rounding band
  // and, where speed pairs run at `steps` (with_noise), the host's A/A noise.
  const Baseline& baseline(int steps, bool with_noise = true);
  std::optional<Band> rounding_band(int steps, const TrialResult& s0, const std::vector<TrialResult>& band_runs,
                                    const TrialResult* preflight_b, std::vector<std::int64_t>& ids);
  void measure_noise_at(int steps);
  // The gate verdict of a run of `config` against the baseline at its steps.
  Verdict gate(const Config& config, const TrialResult& run, const Baseline& base) const;
  // Tolerance configurations at the full step budget: the same verdict at the horizon.
  Verdict confirm_at_horizon(const Config& config, int steps);
  // The ABAB pairs of `config` (campaign_speed.cpp): sequential until the interval decides
  // or --max-repeats; fills e's speed fields, trial ids and `pairs`.
  struct SpeedOutcome {
    std::optional<SpeedInterval> interval;  // nullopt: a run failed (e has the failure)
    std::vector<SpeedPairRow> pairs;
  };
  SpeedOutcome measure_speed(const Config& config, int steps, const Run& cand, const std::optional<Run>& first_base,
                             Evaluation& e);
  // Projects the peak for `c` from its run at the measured micro-batch plus a probe
  // at twice that (--probe-at-target: at the target, and at twice the measured one when
  // the target runs out of memory); stores the projection. nullopt + failure when the
  // probe failed. `probe` gets the probe's run (the failed one, or the one projected from)
  // and `probe_mb` its micro-batch.
  std::optional<Projection> project(const Config& c, const TrialResult& at_mb, std::vector<std::int64_t>& ids,
                                    Run* probe, int* probe_mb);
  void check_budget() const;
  void progress(const std::string& what) const;
  Evaluation finish(Evaluation e);

  Store& store_;
  std::int64_t campaign_id_;
  const Manifest& manifest_;
  CampaignOptions opt_;
  int micro_batch_ = 1, target_micro_batch_ = 1;
  int probe_micro_batch_ = 2;  // the target with --probe-at-target, else 2 x micro_batch_
  std::map<int, Baseline> baselines_;
  std::set<int> noise_measured_;  // step budgets whose A/A noise pairs ran
  bool seed_band_warned_ = false;
  std::optional<bool> deterministic_;
  double baseline_projected_ = 0;
  double baseline_target_samples_per_s_ = 0;  // the baseline's probe at the target; 0 = none
  int trials_run_ = 0;
  double best_speedup_ = 1.0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  WarmStart warm_start_;
  std::unique_ptr<Executor> executor_;
  std::string runs_dir_;
};

}  // namespace sg::agent
