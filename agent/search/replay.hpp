// Simulation mode: an Evaluator that answers from a recorded trial table instead
// of running a trainer, so every strategy can be tested (and re-run) without a
// GPU. A table is JSON {"entries": [{"config": {...}, "steps": N, "disposition":
// ..., "speedup": x, "spread": s, "projected_peak_bytes": b}], "kernel_timings":
// {"ROPE": [{"params": "plain" | "threads=128", "fwdbwd_us": t, "matches_plain": true}]}}
// ("kernel_timings" optional) or the evaluations and kernel timings of a stored campaign.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/search/evaluator.hpp"

namespace sg::agent {

class Store;

class ReplayEvaluator : public Evaluator {
 public:
  explicit ReplayEvaluator(const nlohmann::json& table);
  static ReplayEvaluator from_store(Store& store, std::int64_t campaign_id);

  // The recorded row (target_speedup from its "target_speedup", when recorded); with
  // Measure::speed_pairs its projected peak and target speedup are left out (NaN), with
  // target_probe its paired speedup, as a campaign's evaluation has none of what it did not
  // measure.
  Evaluation evaluate(const Config& config, int steps, const std::string& strategy,
                      Measure measure) override;
  // The recorded rows of the requested variants (those not recorded are left out);
  // nullopt when the family has none.
  std::optional<KernelTrialResult> time_kernels(const std::string& family,
                                                const std::vector<std::string>& variants) override;

  // Every (config key, steps) asked for, in order.
  const std::vector<std::pair<std::string, int>>& calls() const { return calls_; }
  // Stop answering after this many calls (BudgetExhausted), < 0 = unlimited.
  int budget = -1;

 private:
  ReplayEvaluator() = default;
  std::map<std::pair<std::string, int>, Evaluation> table_;
  std::map<std::string, std::vector<KernelVariantTiming>> kernel_timings_;  // by family
  std::vector<std::pair<std::string, int>> calls_;
};

}  // namespace sg::agent
