// The gate's verdicts: rows of the evaluations table (one per configuration and step
// budget), the memory projections behind them, the campaign's finals at the target
// micro-batch (target_finals, schema v5) and kernel timings (kernel_timings, schema v4).
// Store methods: agent/store/evaluations.cpp, target_finals.cpp, kernel_timings.cpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/disposition.hpp"

namespace sg::agent {

struct EvaluationRow {
  std::int64_t id = 0, campaign_id = 0;
  std::string strategy, config_key;
  int steps = 0;
  Disposition disposition = Disposition::crash;
  std::string gate_class, reason;
  double speedup = 0, speedup_spread = 0, samples_per_s = 0, projected_peak_bytes = 0;
  // One-sided 95 % bounds of the paired speedup (NaN when unpaired or before schema 6).
  double speedup_lo = std::nan(""), speedup_hi = std::nan("");
  int pairs = 0;
  std::vector<std::int64_t> trial_ids;
  bool on_frontier = false;
};

struct ProjectionRow {
  std::int64_t campaign_id = 0;
  std::string config_key;
  int target_micro_batch = 1, world_size = 1, zero_stage = 0;
  nlohmann::json inputs;
  double projected_bytes = 0;
  std::optional<double> measured_bytes, relative_error;
};

// One variant timed by a kernel trial (table kernel_timings, schema v4).
struct KernelTimingRow {
  std::int64_t id = 0, campaign_id = 0, trial_id = 0;
  std::string family, params;  // params: "plain" or "threads=128,vec=2"
  int micro_batch = 0;
  double fwd_us = 0, fwdbwd_us = 0;
  bool matches_plain = false;
};

// One finalist of one memory budget paired against the baseline at the target micro-batch
// (table target_finals, schema v5; the `finals` strategy).
struct TargetFinalRow {
  std::int64_t id = 0, campaign_id = 0, evaluation_id = 0;
  std::string budget_name, config_key, reason;
  double budget_bytes = 0;
  int micro_batch = 0, steps = 0, rounds = 0;
  Disposition disposition = Disposition::crash;  // accepted = both sides ran every round
  double speedup = 0, speedup_spread = 0, samples_per_s = 0, baseline_samples_per_s = 0;
  double speedup_lo = std::nan(""), speedup_hi = std::nan("");
  std::vector<std::int64_t> trial_ids;
};

}  // namespace sg::agent
