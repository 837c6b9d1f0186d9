#include "agent/campaign/campaign.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/protocol/unknown_target.hpp"
#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/shared_claims.hpp"
#include "agent/store/store.hpp"
#include "agent/store/trial_launch.hpp"

namespace sg::agent {

using nlohmann::json;

json CampaignOptions::to_json() const {
  json budgets_j = json::object();
  for (const auto& b : budgets) budgets_j[b.name] = b.bytes;
  json j = {{"workload", workload}, {"size", size}, {"trainer", trainer}, {"memory_budgets", budgets_j},
            {"target_micro_batch", target_micro_batch}, {"target_world_size", target_world_size},
            {"zero_stage", zero_stage}, {"micro_batch", micro_batch}, {"grad_accum", grad_accum},
            {"steps", steps}, {"screen_steps", screen_steps}, {"seeds", seeds}, {"threads", threads},
            {"repeats", repeats}, {"band_factor", band_factor}, {"plan", plan},
            {"max_repeats", max_repeats}, {"min_effect", min_effect}, {"noise_pairs", noise_pairs},
            {"perturb_eps", perturb_eps}, {"rounding_factor", rounding_factor},
            {"horizon_factor", horizon_factor}};
  // Only when it changes what is measured: campaigns of one-rank trials keep the
  // options (and so resume) they had before executors existed. The executor itself
  // does not change results and is not part of the options.
  if (trial_world_size != 1) j["trial_world_size"] = trial_world_size;
  if (probe_at_target) j["probe_at_target"] = true;  // likewise: older campaigns resume
  if (prune_rounds != 0) j["prune_rounds"] = prune_rounds;
  return j;
}

void CampaignOptions::validate() const {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UsageError(msg);
  };
  need(!workload.empty(), "--workload is required");
  need(!size.empty(), "--size is required");
  need(steps >= 1, "--steps must be >= 1");
  need(screen_steps >= 1 && screen_steps <= steps, "--screen-steps must be in 1..--steps");
  need(!seeds.empty(), "--seeds needs at least one seed");
  need(threads >= 1, "--threads must be >= 1");
  need(repeats >= 1, "--repeats must be >= 1");
  need(max_repeats >= repeats && max_repeats <= 64, "--max-repeats must be in --repeats..64");
  need(std::isfinite(min_effect) && min_effect >= 0 && min_effect < 1, "--min-effect must be in [0, 1)");
  need(noise_pairs == 0 || (noise_pairs >= 2 && noise_pairs <= 64), "--noise-pairs must be 0 or 2..64");
  need(std::isfinite(perturb_eps) && perturb_eps >= 0 && perturb_eps < 0.5, "--perturb-eps must be in [0, 0.5)");
  need(std::isfinite(rounding_factor) && rounding_factor >= 1 && rounding_factor <= 1e6,
       "--rounding-factor must be in 1..1e6");
  need(horizon_factor >= 1 && horizon_factor <= 64, "--horizon-factor must be in 1..64");
  need(prune_rounds >= 0, "--prune-rounds must be >= 0");
  need(band_factor > 0 && band_factor <= 1e6, "--band-factor must be in (0, 1e6]");
  need(budget_trials >= 0, "--budget-trials must be >= 0");
  need(budget_minutes >= 0 && budget_minutes <= kMaxBudgetMinutes,
       fmt::format("--budget-minutes must be in 0..{} (0 = unlimited)", kMaxBudgetMinutes));
  need(trial_deadline_s >= 1 && trial_deadline_s <= kMaxTrialTimeoutS,
       fmt::format("--trial-timeout must be a number of seconds in 1..{}", kMaxTrialTimeoutS));
  need(target_world_size >= 1, "--target-world-size must be >= 1");
  need(zero_stage >= 0 && zero_stage <= 3, "--zero-stage must be 0..3");
  need(target_micro_batch >= 0 && micro_batch >= 0, "micro-batches must be >= 1");
  need(grad_accum >= 1, "--grad-accum must be >= 1");
  need(!budgets.empty(), "at least one --memory-budget is needed");
  need(trial_world_size >= 1, "--trial-world-size must be >= 1");
  executor.validate();
  for (const auto& p : plan) {
    need(StrategyRegistry::instance().create(p) != nullptr, "unknown strategy '" + p + "' in --plan");
  }
}

SpeedRule speed_rule(const CampaignOptions& opt) {
  SpeedRule r;
  r.min_effect = opt.min_effect;
  r.min_pairs = opt.repeats;
  r.max_pairs = opt.max_repeats;
  return r;
}

SearchOptions search_options(const CampaignOptions& opt, bool rank_at_target) {
  SearchOptions so;
  so.screen_steps = opt.screen_steps;
  so.full_steps = opt.steps;
  so.prune_rounds = opt.prune_rounds;
  so.rank_at_target = rank_at_target;
  for (const auto& b : opt.budgets) so.budget_bytes.push_back(static_cast<double>(b.bytes));
  // Largest first, whatever the order on the command line: a resumed campaign (whose
  // options match by budget name) refines in the same order.
  std::sort(so.budget_bytes.begin(), so.budget_bytes.end(), std::greater<>());
  return so;
}

CampaignOptions with_defaults(CampaignOptions opt) {
  if (opt.screen_steps == 0) opt.screen_steps = std::max(std::min(3, opt.steps), opt.steps / 2);
  if (opt.plan.empty()) opt.plan = default_plan();
  return opt;
}

CampaignOptions prepare_campaign(const CampaignOptions& in, const Manifest& manifest) {
  CampaignOptions opt = with_defaults(in);
  opt.validate();
  if (std::string bad = unknown_target_message(manifest, opt.workload, opt.size); !bad.empty()) {
    throw UsageError(bad);
  }
  namespace fs = std::filesystem;
  fs::path db(opt.db_path);
  if (db.has_parent_path()) fs::create_directories(db.parent_path());
  if (opt.runs_dir.empty()) {
    opt.runs_dir = ((db.has_parent_path() ? db.parent_path() : fs::path(".")) / "runs").string();
  }
  make_executor(opt.executor, opt.trial_world_size);  // refuses impossible executors before anything is written
  return opt;
}

std::vector<FrontierPoint> accepted_points(const std::vector<EvaluationRow>& evals, int steps) {
  std::vector<FrontierPoint> pts;
  for (const auto& e : evals) {
    if (e.steps != steps || e.disposition != Disposition::accepted) continue;
    pts.push_back({e.id, e.speedup, e.projected_peak_bytes, config_from_key(e.config_key).size()});
  }
  return pts;
}

CampaignOutcome drive_campaign(Store& store, const CampaignOptions& opt, const Manifest& manifest,
                               const CampaignHooks& hooks) {
  CampaignOutcome out;
  out.id = hooks.open(store);
  const std::shared_ptr<void> held = hooks.hold ? hooks.hold(store, out.id) : nullptr;
  CampaignEvaluator evaluator(store, out.id, manifest, opt);
  evaluator.trials().requeue_stale(kStaleAfterS);
  if (hooks.before_trial) evaluator.trials().set_before_trial(hooks.before_trial);
  SearchContext ctx(manifest, evaluator, search_options(opt, evaluator.probes_at_target()));
  ctx.plan = opt.plan;
  CampaignRun run{store, out.id, manifest, opt, evaluator, ctx};
  try {
    ctx.evaluate({}, opt.steps, "baseline");
    out.baseline_measured = true;
    if (!hooks.after_baseline || hooks.after_baseline(run)) {
      for (const auto& name : opt.plan) ctx.run_strategy(name);
    }
  } catch (const BudgetExhausted&) {
    out.budget_spent = true;
    spdlog::info("budget spent after {} trainer runs", evaluator.trials_run());
  } catch (const GateFailure& e) {
    throw_if_interrupted();  // a trial ended by the stop signal is no verdict
    store.set_campaign_determinism(out.id, evaluator.deterministic().value_or(false),
                                   std::string("baseline failed: ") + e.what());
    out.gate_failure = e.what();
  }
  set_progress_status("");  // the status line is gone before the summary
  out.trials_run = evaluator.trials_run();
  out.best_speedup = evaluator.best_speedup();
  if (!out.gate_failure.empty()) return out;
  // The frontier over everything confirmed at the full step budget.
  const std::vector<FrontierPoint> pts = accepted_points(store.evaluations(out.id), opt.steps);
  std::vector<std::int64_t> frontier;
  for (auto i : pareto_frontier(pts)) frontier.push_back(pts[i].id);
  store.set_frontier(out.id, frontier);
  return out;
}

namespace {

// tune's rule: resume the latest unfinished campaign with the same trainer, manifest and
// options (--resume: the latest finished one too), else start one. One transaction:
// controllers started together with identical options share one campaign.
std::int64_t open_tune_campaign(Store& store, const CampaignOptions& opt, const Manifest& manifest) {
  std::int64_t cid = 0;
  store.write([&] {
    auto prev = store.latest_campaign(/*unfinished_only=*/!opt.require_resume, opt.workload, opt.size);
    if (prev && prev->trainer == opt.trainer && prev->manifest == manifest.raw && prev->options == opt.to_json()) {
      cid = prev->id;
      if (prev->state != "running") store.reopen_campaign(cid);
      spdlog::info("resuming campaign {} (started {})", cid, prev->created_at);
      return;
    }
    if (opt.require_resume) {
      throw UsageError(prev ? fmt::format("campaign {} cannot be resumed: trainer, manifest or options differ", prev->id)
                            : "--resume: no campaign for this workload and size in " + opt.db_path);
    }
    CampaignRow c;
    c.workload = opt.workload;
    c.size = opt.size;
    c.trainer = opt.trainer;
    c.manifest = manifest.raw;
    c.options = opt.to_json();
    cid = store.create_campaign(c);
    spdlog::info("campaign {} started in {}", cid, opt.db_path);
  });
  return cid;
}

// Shared campaigns: the reservation keeper, and the reservations released at the end.
struct SharedClaims {
  SharedClaims(Store& store, const std::string& db_path, std::int64_t cid)
      : store(store), cid(cid), keeper(db_path, cid, std::chrono::seconds(10)) {}
  ~SharedClaims() {
    try {
      release_reservations(store, cid);
    } catch (const std::exception& e) {
      spdlog::warn("reservations not released: {}", e.what());
    }
  }
  Store& store;
  std::int64_t cid;
  ReservationKeeper keeper;
};

}  // namespace

std::int64_t run_campaign(const CampaignOptions& in, const Manifest& full_manifest) {
  // Only the switches that apply to this campaign's workload are searched (protocol §1).
  // Nor those that do nothing at the trials' world size (protocol §1, min_world_size).
  const Manifest manifest = full_manifest.for_workload(in.workload).for_world_size(in.trial_world_size);
  const CampaignOptions opt = prepare_campaign(in, manifest);
  Store store(opt.db_path);
  std::int64_t cid = 0;
  CampaignHooks hooks;
  hooks.open = [&](Store& s) { return cid = open_tune_campaign(s, opt, manifest); };
  hooks.hold = [&](Store& s, std::int64_t id) { return std::make_shared<SharedClaims>(s, opt.db_path, id); };
  // Another controller on this campaign may hold a key: wait for its outcome instead
  // of running the key twice (agent/store/shared_claims.hpp).
  hooks.before_trial = [&store, &cid](const std::string& purpose, const std::string& key) {
    reserve_trial_key(store, cid, purpose, key, kStaleAfterS, std::chrono::milliseconds(250), [&](const KeyOwner& o) {
      spdlog::info("trial {} ({}) runs under controller {} on {}: waiting for its outcome", o.trial_id, purpose,
                   o.controller_pid, o.host);
    });
  };
  const CampaignOutcome out = drive_campaign(store, opt, manifest, hooks);
  if (!out.gate_failure.empty()) {
    store.finish_campaign(cid);
    throw GateFailure(out.gate_failure);
  }
  throw_if_interrupted();  // the campaign stays unfinished: the next controller resumes it
  store.finish_campaign(cid);
  spdlog::info("campaign {} finished{}: {} trainer runs now, best speedup {:.3f}x", cid,
               out.budget_spent ? " (budget spent)" : "", out.trials_run, out.best_speedup);
  return cid;
}

}  // namespace sg::agent
