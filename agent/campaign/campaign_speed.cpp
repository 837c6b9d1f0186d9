// CampaignEvaluator::measure_speed and pair_of: a configuration's ABAB pairs against the baseline
// (docs/controller.md, "Speed verdicts"). Pairs run until the interval decides (its lower
// bound clears 1 + --min-effect, or its upper bound falls below it), at least --repeats and
// at most --max-repeats; a pair's run that fails ends the evaluation with its failure.
// Pair r's keys are fixed by r, so a resumed campaign replays the same sequence.
#include <cmath>

#include <fmt/format.h>

#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/gate/gate.hpp"  // median

namespace sg::agent {

std::optional<CampaignEvaluator::PairOfRuns> CampaignEvaluator::pair_of(const Run& a, const Run& b,
                                                                        const std::string& pair,
                                                                        int steps,
                                                                        int repeat) const {
  const SpeedPair p{steady_step_seconds(a.result->step_records),
                    steady_step_seconds(b.result->step_records)};
  if (p.base_step_s <= 0 || p.cand_step_s <= 0) return std::nullopt;
  SpeedPairRow row{
      campaign_id_, 0,      a.trial_id,    b.trial_id,    pair,
      steps,        repeat, p.base_step_s, p.cand_step_s, std::log(p.base_step_s / p.cand_step_s)};
  return PairOfRuns{p, row};
}

CampaignEvaluator::SpeedOutcome CampaignEvaluator::measure_speed(
    const Config& config, int steps, const Run& cand, const std::optional<Run>& first_base,
    Evaluation& e) {
  SpeedOutcome out;
  const SpeedRule rule = speed_rule(opt_);
  const std::string pair = config_key(config);
  const int s0 = opt_.trial.seeds.front();
  std::vector<SpeedPair> pairs;
  std::vector<double> cand_samples_per_s;
  SpeedInterval interval;
  for (int r = 0; r < rule.max_pairs; ++r) {
    const bool from_gate = r == 0 && first_base;
    Run ra = from_gate ? *first_base : run("speed_base", {}, s0, steps, micro_batch_, r, pair);
    Run rb = from_gate ? cand : run("speed_cand", config, s0, steps, micro_batch_, r);
    if (!from_gate) {
      e.trial_ids.push_back(ra.trial_id);
      e.trial_ids.push_back(rb.trial_id);
    }
    if (!ra.result || !rb.result) {
      const Run& bad = !rb.result ? rb : ra;
      e.disposition = *bad.failure;
      e.reason = "speed pair " + std::to_string(r) + ": " + bad.reason;
      return out;
    }
    const std::optional<PairOfRuns> p = pair_of(ra, rb, pair, steps, r);
    if (!p) {
      e.disposition = Disposition::invalid_result;
      e.reason = fmt::format("speed pair {}: a run reported no positive step seconds", r);
      return out;
    }
    pairs.push_back(p->pair);
    out.pairs.push_back(p->row);
    cand_samples_per_s.push_back(rb.result->samples_per_s);
    if (speed_stops(pairs, rule, &interval)) break;
  }
  e.speedup = interval.speedup;
  e.speedup_lo = interval.lo;
  e.speedup_hi = interval.hi;
  e.pairs = interval.pairs;
  e.spread = 0.5 * (interval.hi - interval.lo);
  e.samples_per_s = median(cand_samples_per_s);
  out.interval = interval;
  return out;
}

}  // namespace sg::agent
