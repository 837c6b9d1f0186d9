// CampaignEvaluator::run_finals: the `finals` strategy's pairs at the target micro-batch
// (agent/search/finals.hpp says who the finalists are, docs/controller.md "Presets" why).
//
// One pool of finalists (every budget's, each once), `rounds` interleaved rounds: a
// baseline run at the target, then each finalist (reversed order on odd rounds, so no
// finalist always runs furthest from its baseline). A finalist's ratio per round is its
// step time against that round's baseline's; its speedup and one-sided 95 % interval as
// for the campaign's pairs (gate/speed_stats.hpp, all rounds in one look). Round 0 also re-gates a
// bitwise configuration at the target: its run must be bitwise the baseline's there too (the
// campaign gated it at its own micro-batch). A tolerance configuration has no seed band at the
// target: not re-gated. A finalist whose run fails is out (the failure recorded); a baseline that
// fails in round 0 means the target does not run on this device: no finals. Both sides' trial keys
// name the pool (a hash of its configurations), so a resumed campaign whose pool changed, or a
// nightly run warm-started from an earlier night with another pool, never pairs a finalist's run
// with a baseline run of other rounds: the pool's runs are reused together or not at all.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/common/hash.hpp"
#include "agent/gate/gate.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/search/finals.hpp"

namespace sg::agent {
namespace {

// Rounds of finals: at least three ratios, so one disturbed round does not decide.
constexpr int kMinFinalRounds = 3;

// The pool's configuration keys, hashed: stable across builds and runs.
std::string pool_tag(const std::vector<const EvaluationRow*>& pool) {
  std::string keys;
  for (const EvaluationRow* e : pool) keys += e->config_key + "\n";
  return "finals:" + fnv1a64_hex(keys);
}

struct FinalSide {
  std::vector<SpeedPair> pairs;             // steady-state step seconds per round
  std::vector<double> baseline, candidate;  // samples/s per round
  std::vector<std::int64_t> trial_ids;
  std::optional<Disposition> failure;
  std::string reason;
};

// The pool's runs: `rounds` at `micro_batch`, keys tagged with the pool.
struct FinalsPlan {
  std::vector<const EvaluationRow*> pool;
  int rounds = 0, steps = 0, micro_batch = 0, seed = 0;
  std::string tag;
  bool deterministic = false;

  TrialPlan base(int r) const { return {"final_base", {}, seed, steps, micro_batch, r, tag}; }
  TrialPlan cand(const EvaluationRow* e, int r) const {
    return {"final_cand", config_from_key(e->config_key), seed, steps, micro_batch, r, tag};
  }
};

// Runs not in the store yet (a resumed campaign has some).
int runs_to_do(TrialService& trials, const FinalsPlan& f) {
  int to_run = 0;
  for (int r = 0; r < f.rounds; ++r) {
    if (!trials.stored(f.base(r))) ++to_run;
    for (const EvaluationRow* e : f.pool) {
      if (!trials.stored(f.cand(e, r))) ++to_run;
    }
  }
  return to_run;
}

// One finalist's run of round r against that round's baseline run.
void run_finalist(TrialService& trials, const FinalsPlan& f, int r, const EvaluationRow* e,
                  const TrialRun& base, FinalSide& side) {
  if (side.failure) return;
  TrialRun cand = trials.run(f.cand(e, r));
  side.trial_ids.push_back(base.trial_id);
  side.trial_ids.push_back(cand.trial_id);
  if (!cand.result) {
    side.failure = cand.failure;
    side.reason = fmt::format("round {} at micro-batch {}: {}", r, f.micro_batch, cand.reason);
    return;
  }
  if (r == 0 && f.deterministic && e->gate_class == "bitwise") {
    if (Verdict v = bitwise_equal(*cand.result, *base.result); !v.pass) {
      side.failure = Disposition::gate_failed;
      side.reason =
          fmt::format("not bitwise the baseline at micro-batch {}: {}", f.micro_batch, v.reason);
      return;
    }
  }
  side.pairs.push_back({steady_step_seconds(base.result->step_records),
                        steady_step_seconds(cand.result->step_records)});
  side.baseline.push_back(base.result->samples_per_s);
  side.candidate.push_back(cand.result->samples_per_s);
}

// The interleaved rounds; nullopt when the baseline fails in round 0 (no finals).
std::optional<std::map<std::string, FinalSide>> run_rounds(TrialService& trials,
                                                           const FinalsPlan& f) {
  std::map<std::string, FinalSide> sides;
  for (int r = 0; r < f.rounds; ++r) {
    TrialRun base = trials.run(f.base(r));
    if (!base.result) {
      const std::string why = fmt::format("the baseline at micro-batch {} (round {}): {}: {}",
                                          f.micro_batch, r, to_string(*base.failure), base.reason);
      if (r == 0) {
        spdlog::warn("finals: none: {}", why);
        return std::nullopt;
      }
      for (auto& [key, side] : sides) {
        if (side.failure) continue;
        side.failure = base.failure;
        side.reason = why;
      }
      break;
    }
    std::vector<const EvaluationRow*> order = f.pool;
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    for (const EvaluationRow* e : order) run_finalist(trials, f, r, e, base, sides[e->config_key]);
  }
  return sides;
}

TargetFinalRow final_row(std::int64_t campaign_id, const BudgetFinalists& b, const EvaluationRow* e,
                         const FinalSide& side, const FinalsPlan& f, SpeedRule rule) {
  TargetFinalRow row;
  row.campaign_id = campaign_id;
  row.budget_name = b.budget.name;
  row.budget_bytes = static_cast<double>(b.budget.bytes);
  row.evaluation_id = e->id;
  row.config_key = e->config_key;
  row.micro_batch = f.micro_batch;
  row.steps = f.steps;
  row.rounds = f.rounds;
  row.trial_ids = side.trial_ids;
  if (side.failure) {
    row.disposition = *side.failure;
    row.reason = side.reason;
    return row;
  }
  rule.min_pairs = rule.max_pairs = static_cast<int>(side.pairs.size());
  const SpeedInterval s = judge_pairs(side.pairs, rule);
  row.disposition = Disposition::accepted;
  row.reason =
      fmt::format("{} at micro-batch {} over {} rounds", s.text(), f.micro_batch, f.rounds);
  row.speedup = s.speedup;
  row.speedup_spread = 0.5 * (s.hi - s.lo);
  row.speedup_lo = s.lo;
  row.speedup_hi = s.hi;
  row.samples_per_s = median(side.candidate);
  row.baseline_samples_per_s = median(side.baseline);
  return row;
}

}  // namespace

int CampaignEvaluator::run_finals(const std::vector<Evaluation>& before, int per_budget) {
  const std::optional<CampaignRow> camp = store_.campaign(campaign_id_);
  const std::vector<EvaluationRow> all = store_.evaluations(campaign_id_);
  const TargetRanks rankings(store_, *camp, all);
  std::set<std::int64_t> made_before;
  for (const auto& e : before) made_before.insert(e.id);
  std::vector<EvaluationRow> evals;
  for (const auto& e : all) {
    if (made_before.count(e.id)) evals.push_back(e);
  }
  // The probes ran at the target only when it is above the measured micro-batch.
  const bool at_target = opt_.memory.probe_at_target && target_micro_batch_ > micro_batch_;
  const std::vector<BudgetFinalists> chosen =
      choose_finalists(evals, rankings.before_finals(), opt_.memory.budgets, opt_.trial.steps,
                       per_budget, at_target);
  // No finals this time: the campaign's earlier rows (a resume with another pool) go too.
  const auto none = [&] {
    store_.set_target_finals(campaign_id_, {});
    return 0;
  };
  FinalsPlan f;
  std::set<std::string> in_pool;
  for (const auto& b : chosen) {
    if (!b.skipped.empty())
      spdlog::info("finals: budget {} has none: {}", b.budget.name, b.skipped);
    for (const EvaluationRow* e : b.finalists) {
      if (in_pool.insert(e->config_key).second) f.pool.push_back(e);
    }
  }
  if (f.pool.empty()) return none();
  f.rounds = std::max(kMinFinalRounds, opt_.speed.repeats);
  f.steps = opt_.trial.steps;
  f.micro_batch = target_micro_batch_;
  f.seed = opt_.trial.seeds.front();
  f.tag = pool_tag(f.pool);
  f.deterministic = deterministic_.value_or(false);
  const int to_run = runs_to_do(trials_, f);
  if (to_run > 0 &&
      !trials_.budget_left(to_run - 1)) {  // budget_left(k): a trial after k more still fits
    spdlog::warn(
        "finals: {} runs at micro-batch {} do not fit what is left of the campaign's budget: none",
        to_run, f.micro_batch);
    return none();
  }
  spdlog::info(
      "finals: {} configuration(s) paired with the baseline at micro-batch {}, {} rounds ({} runs "
      "to do)",
      f.pool.size(), f.micro_batch, f.rounds, to_run);
  std::optional<std::map<std::string, FinalSide>> sides = run_rounds(trials_, f);
  if (!sides) return none();
  std::vector<TargetFinalRow> rows;
  for (const auto& b : chosen) {
    for (const EvaluationRow* e : b.finalists) {
      TargetFinalRow row =
          final_row(campaign_id_, b, e, (*sides)[e->config_key], f, speed_rule(opt_));
      spdlog::info("finals: budget {}: {}: {}{}", b.budget.name,
                   config_label(config_from_key(e->config_key)), to_string(row.disposition),
                   row.reason.empty() ? "" : ": " + row.reason);
      rows.push_back(std::move(row));
    }
  }
  store_.set_target_finals(campaign_id_, rows);
  return static_cast<int>(f.pool.size());
}

}  // namespace sg::agent
