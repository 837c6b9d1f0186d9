// What /metrics reports, read in one pass over the store (agent/dashboard/metrics.cpp
// renders it in Prometheus text format). Read-only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent::dashboard {

// A (label, count) pair of a GROUP BY, in the database's order.
using Counts = std::vector<std::pair<std::string, double>>;

// The newest preset of one name. NaN where the stored value is not a number.
struct PresetGauges {
  std::string name;
  double speedup = 0, samples_per_s = 0, projected_peak_bytes = 0, budget_bytes = 0;
  double measured_peak_bytes = 0;  // the largest peak allocated of its trials
  nlohmann::json headline;         // preset_headline of the preset
};

struct NewestCampaign {
  std::int64_t id = 0;
  Counts trial_states;
  double best_accepted_speedup = 0;  // NaN when none is finite
};

struct MetricsSnapshot {
  Counts evaluation_dispositions, trial_states, campaign_states;
  std::vector<PresetGauges> presets;
  std::optional<NewestCampaign> newest;
  std::string newest_fingerprint;  // "" when the newest campaign has no environment
};

MetricsSnapshot read_metrics(Store& store);

}  // namespace sg::agent::dashboard
