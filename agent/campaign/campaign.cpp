#include "agent/campaign/campaign.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/protocol/unknown_target.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/shared_claims.hpp"
#include "agent/store/store.hpp"
#include "agent/trial/trial_service.hpp"

namespace sg::agent {

using nlohmann::json;

CampaignOptions with_defaults(CampaignOptions opt) {
  TrialOptions& t = opt.trial;
  if (t.screen_steps == 0) t.screen_steps = std::max(std::min(3, t.steps), t.steps / 2);
  if (opt.search.plan.empty()) opt.search.plan = default_plan();
  return opt;
}

CampaignOptions prepare_campaign(const CampaignOptions& in, const Manifest& manifest) {
  CampaignOptions opt = with_defaults(in);
  opt.validate();
  if (Problem bad = unknown_target_problem(manifest, opt.workload, opt.size)) {
    throw UsageError(*bad);
  }
  namespace fs = std::filesystem;
  fs::path db(opt.db_path);
  if (db.has_parent_path()) fs::create_directories(db.parent_path());
  if (opt.runs_dir.empty()) {
    opt.runs_dir = ((db.has_parent_path() ? db.parent_path() : fs::path(".")) / "runs").string();
  }
  check_executor(opt.executor, opt.trial.world_size);  // before anything is written
  return opt;
}

CampaignRow new_campaign_row(const CampaignOptions& opt, const Manifest& manifest) {
  CampaignRow c;
  c.workload = opt.workload;
  c.size = opt.size;
  c.trainer = opt.trainer;
  c.manifest = manifest.raw;
  c.options = opt.to_json();
  return c;
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
  ctx.plan = opt.search.plan;
  CampaignRun run{store, out.id, manifest, opt, evaluator, ctx};
  try {
    ctx.evaluate({}, opt.trial.steps, "baseline");
    out.baseline_measured = true;
    if (!hooks.after_baseline || hooks.after_baseline(run)) {
      for (const auto& name : opt.search.plan) ctx.run_strategy(name);
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
  throw_if_interrupted();  // the campaign stays unfinished: the next controller resumes it
  // The frontier over everything confirmed at the full step budget.
  const std::vector<FrontierPoint> pts =
      accepted_points(store.evaluations(out.id), opt.trial.steps);
  std::vector<std::int64_t> frontier;
  for (auto i : pareto_frontier(pts)) frontier.push_back(pts[i].id);
  store.set_frontier(out.id, frontier);
  return out;
}

namespace {

// tune's rule: resume the latest unfinished campaign with the same trainer, manifest and
// options (--resume: the latest finished one too), else start one. One transaction:
// controllers started together with identical options share one campaign.
std::int64_t open_tune_campaign(Store& store, const CampaignOptions& opt,
                                const Manifest& manifest) {
  std::int64_t cid = 0;
  store.write([&] {
    auto prev =
        store.latest_campaign(/*unfinished_only=*/!opt.require_resume, opt.workload, opt.size);
    if (prev && prev->trainer == opt.trainer && prev->manifest == manifest.raw &&
        prev->options == opt.to_json()) {
      cid = prev->id;
      if (prev->state != "running") store.reopen_campaign(cid);
      spdlog::info("resuming campaign {} (started {})", cid, prev->created_at);
      return;
    }
    if (opt.require_resume) {
      throw UsageError(
          prev ? fmt::format("campaign {} cannot be resumed: trainer, manifest or options differ",
                             prev->id)
               : "--resume: no campaign for this workload and size in " + opt.db_path);
    }
    cid = store.create_campaign(new_campaign_row(opt, manifest));
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
  const Manifest manifest =
      full_manifest.for_workload(in.workload).for_world_size(in.trial.world_size);
  const CampaignOptions opt = prepare_campaign(in, manifest);
  Store store(opt.db_path);
  std::int64_t cid = 0;
  CampaignHooks hooks;
  hooks.open = [&](Store& s) { return cid = open_tune_campaign(s, opt, manifest); };
  hooks.hold = [&](Store& s, std::int64_t id) {
    return std::make_shared<SharedClaims>(s, opt.db_path, id);
  };
  // Another controller on this campaign may hold a key: wait for its outcome instead
  // of running the key twice (agent/store/shared_claims.hpp).
  hooks.before_trial = [&store, &cid](const std::string& purpose, const std::string& key) {
    reserve_trial_key(store, cid, purpose, key, kStaleAfterS, std::chrono::milliseconds(250),
                      [&](const KeyOwner& o) {
                        spdlog::info(
                            "trial {} ({}) runs under controller {} on {}: waiting for its outcome",
                            o.trial_id, purpose, o.controller_pid, o.host);
                      });
  };
  const CampaignOutcome out = drive_campaign(store, opt, manifest, hooks);
  if (!out.gate_failure.empty()) {
    store.finish_campaign(cid);
    throw GateFailure(out.gate_failure);
  }
  store.finish_campaign(cid);
  spdlog::info("campaign {} finished{}: {} trainer runs now, best speedup {:.3f}x", cid,
               out.budget_spent ? " (budget spent)" : "", out.trials_run, out.best_speedup);
  return cid;
}

}  // namespace sg::agent
