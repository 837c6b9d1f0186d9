#include "agent/campaign/campaign_options.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "agent/common/errors.hpp"

namespace sg::agent {

using nlohmann::json;

// The stored options: a campaign resumes only under equal options, so the keys and
// values stay as they were before the options were grouped.
json CampaignOptions::to_json() const {
  json budgets_j = json::object();
  for (const auto& b : memory.budgets) budgets_j[b.name] = b.bytes;
  json j = {{"workload", workload},
            {"size", size},
            {"trainer", trainer},
            {"memory_budgets", budgets_j},
            {"target_micro_batch", memory.target_micro_batch},
            {"target_world_size", memory.target_world_size},
            {"zero_stage", memory.zero_stage},
            {"micro_batch", trial.micro_batch},
            {"grad_accum", trial.grad_accum},
            {"steps", trial.steps},
            {"screen_steps", trial.screen_steps},
            {"seeds", trial.seeds},
            {"threads", trial.threads},
            {"repeats", speed.repeats},
            {"band_factor", gate.band_factor},
            {"plan", search.plan},
            {"max_repeats", speed.max_repeats},
            {"min_effect", speed.min_effect},
            {"noise_pairs", speed.noise_pairs},
            {"perturb_eps", gate.perturb_eps},
            {"rounding_factor", gate.rounding_factor},
            {"horizon_factor", gate.horizon_factor}};
  // Only when it changes what is measured: campaigns of one-rank trials keep the
  // options (and so resume) they had before executors existed. The executor itself
  // does not change results and is not part of the options.
  if (trial.world_size != 1) j["trial_world_size"] = trial.world_size;
  if (memory.probe_at_target) j["probe_at_target"] = true;  // likewise: older campaigns resume
  if (search.prune_rounds != 0) j["prune_rounds"] = search.prune_rounds;
  return j;
}

namespace {

void need(bool ok, const std::string& msg) {
  if (!ok) throw UsageError(msg);
}

void validate_trial(const TrialOptions& t) {
  need(t.steps >= 1, "--steps must be >= 1");
  need(t.screen_steps >= 1 && t.screen_steps <= t.steps, "--screen-steps must be in 1..--steps");
  need(!t.seeds.empty(), "--seeds needs at least one seed");
  need(t.threads >= 1, "--threads must be >= 1");
}

void validate_speed_and_gate(const SpeedOptions& s, const GateOptions& g, const PlanOptions& p) {
  need(s.repeats >= 1, "--repeats must be >= 1");
  need(s.max_repeats >= s.repeats && s.max_repeats <= 64, "--max-repeats must be in --repeats..64");
  need(std::isfinite(s.min_effect) && s.min_effect >= 0 && s.min_effect < 1,
       "--min-effect must be in [0, 1)");
  need(s.noise_pairs == 0 || (s.noise_pairs >= 2 && s.noise_pairs <= 64),
       "--noise-pairs must be 0 or 2..64");
  need(std::isfinite(g.perturb_eps) && g.perturb_eps >= 0 && g.perturb_eps < 0.5,
       "--perturb-eps must be in [0, 0.5)");
  need(std::isfinite(g.rounding_factor) && g.rounding_factor >= 1 && g.rounding_factor <= 1e6,
       "--rounding-factor must be in 1..1e6");
  need(g.horizon_factor >= 1 && g.horizon_factor <= 64, "--horizon-factor must be in 1..64");
  need(p.prune_rounds >= 0, "--prune-rounds must be >= 0");
  need(g.band_factor > 0 && g.band_factor <= 1e6, "--band-factor must be in (0, 1e6]");
}

}  // namespace

void CampaignOptions::validate() const {
  need(!workload.empty(), "--workload is required");
  need(!size.empty(), "--size is required");
  validate_trial(trial);
  validate_speed_and_gate(speed, gate, search);
  need(budget.trials >= 0, "--budget-trials must be >= 0");
  need(budget.minutes >= 0 && budget.minutes <= kMaxBudgetMinutes,
       fmt::format("--budget-minutes must be in 0..{} (0 = unlimited)", kMaxBudgetMinutes));
  need(trial.deadline_s >= 1 && trial.deadline_s <= kMaxTrialTimeoutS,
       fmt::format("--trial-timeout must be a number of seconds in 1..{}", kMaxTrialTimeoutS));
  need(memory.target_world_size >= 1, "--target-world-size must be >= 1");
  need(memory.zero_stage >= 0 && memory.zero_stage <= 3, "--zero-stage must be 0..3");
  need(memory.target_micro_batch >= 0 && trial.micro_batch >= 0, "micro-batches must be >= 1");
  need(trial.grad_accum >= 1, "--grad-accum must be >= 1");
  need(!memory.budgets.empty(), "at least one --memory-budget is needed");
  need(trial.world_size >= 1, "--trial-world-size must be >= 1");
  executor.validate();
  for (const auto& p : search.plan) {
    need(StrategyRegistry::instance().create(p) != nullptr,
         "unknown strategy '" + p + "' in --plan");
  }
}

SpeedRule speed_rule(const CampaignOptions& opt) {
  SpeedRule r;
  r.min_effect = opt.speed.min_effect;
  r.min_pairs = opt.speed.repeats;
  r.max_pairs = opt.speed.max_repeats;
  return r;
}

SearchOptions search_options(const CampaignOptions& opt, bool rank_at_target) {
  SearchOptions so;
  so.screen_steps = opt.trial.screen_steps;
  so.full_steps = opt.trial.steps;
  so.prune_rounds = opt.search.prune_rounds;
  so.rank_at_target = rank_at_target;
  for (const auto& b : opt.memory.budgets) so.budget_bytes.push_back(static_cast<double>(b.bytes));
  // Largest first, whatever the order on the command line: a resumed campaign (whose
  // options match by budget name) refines in the same order.
  std::sort(so.budget_bytes.begin(), so.budget_bytes.end(), std::greater<>());
  return so;
}

}  // namespace sg::agent
