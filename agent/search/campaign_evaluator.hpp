// The real Evaluator: runs trials through the runner (memoised in the store by
// trial key, so a resumed campaign re-uses every finished trial), establishes the
// preflight and seed band per step budget, gates candidates, projects memory and
// measures speed with paired ABAB repeats.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/gate/gate.hpp"
#include "agent/memory/projection.hpp"
#include "agent/runner/result.hpp"
#include "agent/search/campaign.hpp"
#include "agent/search/evaluator.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

class CampaignEvaluator : public Evaluator {
 public:
  CampaignEvaluator(Store& store, std::int64_t campaign_id, const Manifest& manifest, const CampaignOptions& opt);

  Evaluation evaluate(const Config& config, int steps, const std::string& strategy) override;

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
    Band band;
    std::vector<std::int64_t> trial_ids;
  };

  Run run(const std::string& purpose, const Config& c, int seed, int steps, int micro_batch, int repeat,
          const std::string& paired_with = "");
  const Baseline& baseline(int steps);
  // Projects the peak for `c` from its run at the measured micro-batch plus a probe
  // at twice that; stores the projection. nullopt + failure when the probe failed.
  std::optional<Projection> project(const Config& c, const TrialResult& at_mb, std::vector<std::int64_t>& ids,
                                    Run* failed_probe);
  void check_budget() const;
  void progress(const std::string& what) const;
  Evaluation finish(Evaluation e);

  Store& store_;
  std::int64_t campaign_id_;
  const Manifest& manifest_;
  CampaignOptions opt_;
  int micro_batch_ = 1, target_micro_batch_ = 1;
  std::map<int, Baseline> baselines_;
  std::optional<bool> deterministic_;
  double baseline_projected_ = 0;
  int trials_run_ = 0;
  double best_speedup_ = 1.0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  WarmStart warm_start_;
};

}  // namespace sg::agent
