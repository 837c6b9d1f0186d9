// Preset ranking at the target micro-batch (see target_rank.hpp).
#include "agent/ranking/target_rank.hpp"

#include "agent/gate/speed_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "agent/protocol/manifest.hpp"

namespace sg::agent {
namespace {

// The samples/s of the evaluation's memory probe at the target micro-batch, 0 if none ran
// there (no probe, a fallback to a smaller batch, or a failed run).
double target_samples_per_s(const EvaluationRow& e,
                            const std::map<std::int64_t, const TrialRow*>& trials, int target) {
  for (std::int64_t id : e.trial_ids) {
    auto it = trials.find(id);
    if (it == trials.end()) continue;
    const TrialRow& t = *it->second;
    if (t.purpose == "memory_probe" && t.micro_batch == target && t.run_ok && t.samples_per_s > 0) {
      return t.samples_per_s;
    }
  }
  return 0;
}

int resolved_target(const CampaignRow& camp) {
  const int target = camp.options.value("target_micro_batch", 0);
  if (target > 0) return target;
  const Manifest m = parse_manifest(camp.manifest);
  const SizeSpec* size = m.find_size(camp.workload, camp.size);
  return size ? size->default_micro_batch : 0;
}

}  // namespace

std::string TargetRank::describe() const {
  switch (basis) {
    case Basis::finals:
      return fmt::format("{} against the baseline at micro-batch {} (paired finals, {} rounds)",
                         speed_text(speedup, lo, hi, rounds), target_micro_batch, rounds);
    case Basis::probe:
      return fmt::format("{:.3f}x the baseline's samples/s at micro-batch {} (memory probes)",
                         speedup, target_micro_batch);
    case Basis::campaign:
      break;
  }
  return fmt::format("{:.3f}x (the campaign's speedup)", speedup);
}

TargetRanks::TargetRanks(Store& store, const CampaignRow& camp,
                         const std::vector<EvaluationRow>& evals)
    : target_(resolved_target(camp)) {
  const int full_steps = camp.options.value("steps", 0);
  for (const auto& e : evals) {
    by_probe_[e.id] = {e.speedup};
    if (e.config_key.empty() && e.steps == full_steps) baseline_id_ = e.id;
  }
  finals_ = store.target_finals(camp.id);
  for (const auto& f : finals_) {
    if (f.disposition == Disposition::accepted) any_at_target_ = true;
    if (f.disposition == Disposition::gate_failed) excluded_.insert(f.evaluation_id);
  }
  if (!camp.options.value("probe_at_target", false) || target_ <= 0) return;
  const std::vector<TrialRow> rows = store.trials(camp.id);
  std::map<std::int64_t, const TrialRow*> trials;
  for (const auto& t : rows) trials[t.id] = &t;
  double baseline = 0;
  for (const auto& e : evals) {
    if (e.config_key.empty())
      baseline = std::max(baseline, target_samples_per_s(e, trials, target_));
  }
  if (baseline <= 0) return;  // the baseline did not fit at the target: nothing to compare with
  for (const auto& e : evals) {
    // A drop of prune's compared at the target and not taken has no paired speedup: it may
    // not become a preset or a finalist (docs/controller.md, "prune"), so no rank either.
    if (std::isnan(e.speedup)) continue;
    const double sps = target_samples_per_s(e, trials, target_);
    if (sps <= 0) continue;
    TargetRank& r = by_probe_[e.id];
    r.speedup = sps / baseline;
    r.basis = TargetRank::Basis::probe;
    r.target_micro_batch = target_;
    any_at_target_ = true;
  }
}

std::map<std::int64_t, TargetRank> TargetRanks::for_budget(const std::string& budget) const {
  std::map<std::int64_t, TargetRank> out = by_probe_;
  bool finals = false;
  for (const auto& f : finals_) {
    if (f.budget_name != budget || f.disposition != Disposition::accepted) continue;
    out[f.evaluation_id] = {
        f.speedup,    f.speedup_spread, TargetRank::Basis::finals, 1, f.micro_batch, f.rounds,
        f.speedup_lo, f.speedup_hi};
    if (!finals && baseline_id_)
      out[baseline_id_] = {1.0, 0.0, TargetRank::Basis::finals, 1, f.micro_batch, f.rounds};
    finals = true;
  }
  return out;
}

std::vector<FrontierPoint> TargetRanks::ranked(
    std::vector<FrontierPoint> points, const std::map<std::int64_t, TargetRank>& ranks) const {
  for (auto& p : points) {
    if (excluded_.count(p.id)) p.projected_peak = std::numeric_limits<double>::infinity();
    auto it = ranks.find(p.id);
    if (it == ranks.end()) continue;
    p.speedup = it->second.speedup;
    p.tier = it->second.tier;
  }
  return points;
}

}  // namespace sg::agent
