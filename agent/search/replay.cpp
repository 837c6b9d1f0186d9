#include "agent/search/replay.hpp"

#include <algorithm>
#include <cmath>

#include "agent/store/store.hpp"

namespace sg::agent {

ReplayEvaluator::ReplayEvaluator(const nlohmann::json& table) {
  for (const auto& row : table.at("entries")) {
    Evaluation e;
    for (const auto& [k, v] : row.at("config").items()) e.config[k] = v.get<std::string>();
    e.steps = row.at("steps").get<int>();
    e.disposition = disposition_from_string(row.at("disposition").get<std::string>())
                        .value_or(Disposition::crash);
    e.speedup = row.value("speedup", 0.0);
    e.spread = row.value("spread", 0.0);
    e.projected_peak_bytes = row.value("projected_peak_bytes", 0.0);
    e.target_speedup = row.value("target_speedup", std::nan(""));
    e.gate_class = row.value("gate_class", std::string("bitwise"));
    e.reason = row.value("reason", std::string("recorded"));
    table_[{config_key(e.config), e.steps}] = e;
  }
  if (table.contains("kernel_timings")) {
    for (const auto& [family, rows] : table.at("kernel_timings").items()) {
      for (const auto& row : rows) {
        KernelVariantTiming t;
        t.params = row.at("params").get<std::string>();
        t.variant = t.plain() ? "plain_aten" : "fused";
        t.fwdbwd_us = row.at("fwdbwd_us").get<double>();
        t.fwd_us = row.value("fwd_us", t.fwdbwd_us / 3);
        t.matches_plain = row.value("matches_plain", true);
        kernel_timings_[family].push_back(t);
      }
    }
  }
}

ReplayEvaluator ReplayEvaluator::from_store(Store& store, std::int64_t campaign_id) {
  ReplayEvaluator r;
  for (const auto& row : store.evaluations(campaign_id)) {
    Evaluation e;
    e.id = row.id;
    e.config = config_from_key(row.config_key);
    e.steps = row.steps;
    e.disposition = row.disposition;
    e.speedup = row.speedup;
    e.spread = row.speedup_spread;
    e.samples_per_s = row.samples_per_s;
    e.projected_peak_bytes = row.projected_peak_bytes;
    e.gate_class = row.gate_class;
    e.reason = row.reason;
    e.trial_ids = row.trial_ids;
    r.table_[{row.config_key, row.steps}] = e;
  }
  for (const auto& row : store.kernel_timings(campaign_id)) {
    KernelVariantTiming t;
    t.params = row.params;
    t.variant = t.plain() ? "plain_aten" : "fused";
    t.fwd_us = row.fwd_us;
    t.fwdbwd_us = row.fwdbwd_us;
    t.matches_plain = row.matches_plain;
    r.kernel_timings_[row.family].push_back(t);
  }
  return r;
}

std::optional<KernelTrialResult> ReplayEvaluator::time_kernels(
    const std::string& family, const std::vector<std::string>& variants) {
  calls_.emplace_back("kernel-trial " + family, 0);
  auto it = kernel_timings_.find(family);
  if (it == kernel_timings_.end()) return std::nullopt;
  KernelTrialResult r;
  r.status = "ok";
  r.family = family;
  for (const auto& t : it->second) {
    if (std::find(variants.begin(), variants.end(), t.params) != variants.end())
      r.variants.push_back(t);
  }
  return r;
}

Evaluation ReplayEvaluator::evaluate(const Config& config, int steps, const std::string& strategy,
                                     Measure measure) {
  if (budget >= 0 && static_cast<int>(calls_.size()) >= budget) throw BudgetExhausted();
  calls_.emplace_back(config_key(config), steps);
  auto it = table_.find({config_key(config), steps});
  Evaluation e;
  if (it != table_.end()) {
    e = it->second;
  } else if (config.empty()) {
    e.disposition = Disposition::accepted;
    e.speedup = 1.0;
    e.reason = "baseline";
  } else {
    e.disposition = Disposition::crash;
    e.reason = "not in the recorded table";
  }
  e.config = config;
  e.steps = steps;
  e.strategy = strategy;
  if (measure == Measure::speed_pairs && e.correct())
    e.projected_peak_bytes = e.target_speedup = std::nan("");
  if (measure == Measure::target_probe && e.correct()) e.speedup = e.spread = std::nan("");
  return e;
}

}  // namespace sg::agent
