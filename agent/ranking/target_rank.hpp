// How presets rank the accepted configurations that fit a budget.
//
// The campaign measures at a small micro-batch to keep trials cheap, one pair per
// configuration: the ratio carries both sides' noise, and what a configuration saves can
// depend on the batch size (recompute does). Three bases, best last:
//  - campaign: the configuration's paired speedup at the campaign's micro-batch;
//  - probe: with --probe-at-target the memory probe of each configuration that fits one
//    device already runs at the target micro-batch, the size the presets are for, and
//    reports its samples/s there. When the baseline's probe ran at the target, a
//    configuration whose probe did too ranks by its samples/s there over the baseline's;
//    one whose probe fell back to a smaller batch keeps its campaign speedup, the estimate
//    of the same ratio. A probe is one unpaired short run: a close call there is noise;
//  - finals: the `finals` strategy pairs each budget's leading configurations (by the two
//    bases above) against the baseline at the target, interleaved rounds (table
//    target_finals). For a budget with finals, those finalists and the baseline (the
//    pairs' reference, 1.0 by definition) rank above every configuration not paired there
//    (tier 1): the rest were behind the finalists already, and an unpaired probe of one of
//    them must not outrank a paired measurement. A finalist that was not bitwise the
//    baseline at the target (finals row gate_failed) is excluded from every budget.
#pragma once
#include <cmath>

#include "agent/ranking/pareto.hpp"
#include "agent/store/store.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace sg::agent {

struct TargetRank {
  enum class Basis { campaign, probe, finals };
  double speedup = 0;  // what the configuration ranks by
  double spread = 0;   // finals: half the range of the per-round ratios
  Basis basis = Basis::campaign;
  int tier = 0;  // 1 for a budget's finalists and its baseline; compared before speedup
  int target_micro_batch = 0;
  int rounds = 0;                               // finals
  double lo = std::nan(""), hi = std::nan("");  // finals: the one-sided 95 % bounds
  bool measured_at_target() const { return basis != Basis::campaign; }
  std::string describe() const;  // the preset header's "ranked at the target" text
};

class TargetRanks {
 public:
  // For the given evaluations of campaign `camp`: reads its probes and finals.
  TargetRanks(Store& store, const CampaignRow& camp, const std::vector<EvaluationRow>& evals);
  // Per evaluation id: the ranking for presets of the budget named `budget`.
  std::map<std::int64_t, TargetRank> for_budget(const std::string& budget) const;
  // Per evaluation id: the ranking before finals (probes, else campaign speedups).
  const std::map<std::int64_t, TargetRank>& before_finals() const { return by_probe_; }
  // Whether anything was measured at the target (probes or finals).
  bool any_at_target() const { return any_at_target_; }
  // `points` (ids are evaluation ids) with speedup and tier replaced by a budget's ranks
  // (for_budget's); an excluded one gets an infinite projected peak, so it fits no budget
  // (indices stay those of `points`).
  std::vector<FrontierPoint> ranked(std::vector<FrontierPoint> points,
                                    const std::map<std::int64_t, TargetRank>& ranks) const;
  // The micro-batch presets are for: the campaign's --target-micro-batch, or its size's
  // default micro-batch when that was left at 0.
  int target_micro_batch() const { return target_; }

 private:
  std::map<std::int64_t, TargetRank> by_probe_;
  std::vector<TargetFinalRow> finals_;
  std::set<std::int64_t> excluded_;  // not bitwise the baseline at the target
  std::int64_t baseline_id_ = 0;
  int target_ = 0;
  bool any_at_target_ = false;
};

}  // namespace sg::agent
