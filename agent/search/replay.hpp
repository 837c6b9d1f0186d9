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

  // The recorded row; with MemoryProbe::skip its projected peak is left out (NaN), as a
  // campaign's evaluation without the probe has none.
  Evaluation evaluate(const Config& config, int steps, const std::string& strategy, MemoryProbe probe) override;
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
