#include "agent/nightly/nightly.hpp"

#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/campaign/campaign.hpp"
#include "agent/campaign/campaign_evaluator.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/common/units.hpp"
#include "agent/gate/gate.hpp"
#include "agent/nightly/current_presets.hpp"
#include "agent/nightly/nightly_outputs.hpp"
#include "agent/presets/preset_device.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/protocol/unknown_target.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/nightly_store.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::nightly {

using nlohmann::json;

namespace {

// One night's state, shared by the phases below.
class Night {
 public:
  Night(const NightlyOptions& o, const Manifest& m, Store& store)
      : opt_(o), c_(o.campaign), manifest_(m), store_(store) {}

  NightlyReport& report() { return report_; }

  // The driver's hooks (agent/campaign/campaign.hpp): tonight's campaign row, the warm
  // start (only results of tonight's environment, once it is known) and, after the
  // baseline, the environment check and the presets' re-verification.
  CampaignHooks hooks() {
    CampaignHooks h;
    h.open = [this](Store&) { return open(); };
    h.before_trial = [this](const std::string& purpose, const std::string& key) {
      if (warm_env_ == 0 || never_reused(purpose)) return;
      if (auto id = copy_identical_trial(store_, report_.campaign_id, warm_env_, key)) {
        spdlog::debug("warm start: {} reused as trial {}", key, *id);
      }
    };
    h.after_baseline = [this](CampaignRun& run) {
      compare_environment();
      reverify(run.search, current_presets(store_, c_.workload, c_.size, opt_.presets_dir,
                                           manifest_, c_.memory.budgets));
      warm_env_ = env_id_;  // exploration reuses results of tonight's environment only
      return report_.failure.empty();
    };
    return h;
  }

  // The driver's outcome: why the night could not go on, if it could not.
  void measured(const CampaignOutcome& out) {
    report_.trials_run = out.trials_run;
    if (out.budget_spent) report_.budget_spent = true;
    if (!out.baseline_measured && out.budget_spent) {
      report_.failure = "the budget was spent before tonight's baseline was measured";
    } else if (!out.gate_failure.empty() && report_.failure.empty()) {
      report_.failure = "baseline failed: " + out.gate_failure;
    }
  }

  void compare_environment() {
    auto camp = store_.campaign(report_.campaign_id);
    NightlyRunRow row;
    row.campaign_id = report_.campaign_id;
    if (camp && camp->environment_id) {
      env_id_ = *camp->environment_id;
      row.fingerprint_hash = store_.environment_hash(env_id_).value_or("");
    }
    auto prev = previous_environment(store_, report_.campaign_id, c_.workload, c_.size);
    if (prev) {
      row.previous_campaign_id = prev->campaign_id;
      row.previous_fingerprint_hash = prev->hash;
      report_.previous_campaign_id = prev->campaign_id;
      if (env_id_ != 0 && prev->environment_id != env_id_) {
        row.environment_changed = true;
        row.environment_diff =
            fingerprint_diff(prev->fingerprint, environment_json(store_, env_id_));
        report_.environment_changed = true;
        report_.environment_diff = row.environment_diff;
        spdlog::warn(
            "environment CHANGED since campaign {} ({} -> {}): {}; tonight's baseline is new and "
            "results "
            "of the old environment are not reused",
            prev->campaign_id, prev->hash, row.fingerprint_hash, row.environment_diff.dump());
      }
    }
    set_nightly_environment(store_, row);
  }

  void reverify(SearchContext& search, const std::vector<CurrentPreset>& presets) {
    bool spent = false;
    const std::string host_kind =
        env_id_ != 0 ? device_kind(environment_json(store_, env_id_)) : std::string();
    for (const auto& p : presets) {
      PresetCheck check;
      check.name = p.name;
      check.path = p.path;
      check.config_key = config_key(p.config);
      check.recorded_speedup = p.recorded_speedup;
      if (p.device_kind && !host_kind.empty() && !same_device_kind(*p.device_kind, host_kind)) {
        check.verdict = "skipped";
        check.reason = skipped_reason(*p.device_kind, host_kind);
        spdlog::warn("preset {} ({}): {}", p.name, p.path.empty() ? "database" : p.path,
                     check.reason);
        report_.checks.push_back(check);
        continue;
      }
      if (spent) {
        check.verdict = "unverified";
        check.reason = "the budget was spent before it was re-verified";
      } else {
        try {
          judge(search, p, check);
        } catch (const BudgetExhausted&) {
          spent = true;
          report_.budget_spent = true;
          check.verdict = "unverified";
          check.reason = "the budget was spent before it was re-verified";
        }
      }
      if (check.verdict == "demoted") {
        spdlog::error("preset {} DEMOTED: {}", p.name, check.reason);
      } else if (check.verdict == "kept") {
        spdlog::info("preset {} re-verified: {}", p.name, check.reason);
      } else {
        spdlog::error("preset {} not re-verified: {}", p.name, check.reason);
      }
      if (check.verdict != "unverified") {
        VerificationRow v;
        v.campaign_id = report_.campaign_id;
        v.preset_id = p.preset_id;
        v.evaluation_id = check.evaluation_id;
        v.name = p.name;
        v.path = p.path;
        v.config_key = check.config_key;
        v.verdict = check.verdict;
        v.reason = check.reason;
        v.recorded_speedup = check.recorded_speedup;
        v.measured_speedup = check.measured_speedup;
        v.regression_limit = opt_.regression_limit;
        add_verification(store_, v);
        if (check.verdict == "demoted" && p.preset_id)
          demote_preset(store_, *p.preset_id, check.reason);
      }
      report_.checks.push_back(check);
      current_.emplace(p.name, p);
    }
    if (spent) report_.failure = "the budget was spent before every preset was re-verified";
  }

  // One preset decision per budget over the campaign's accepted evaluations (the driver
  // stored the frontier); returns the files to write.
  std::map<std::string, std::string> decide_presets(const NightContext& night) {
    const std::vector<EvaluationRow> evals = store_.evaluations(report_.campaign_id);
    const TargetRanks rankings(store_, *store_.campaign(report_.campaign_id),
                               evals);  // as presets emit ranks
    const std::vector<FrontierPoint> pts = accepted_points(evals, c_.trial.steps);
    std::map<std::int64_t, const EvaluationRow*> by_id;
    for (const auto& e : evals) by_id[e.id] = &e;
    std::map<std::string, std::string> files;
    for (const auto& b : c_.memory.budgets) {
      auto pick = pick_for_budget(rankings.ranked(pts, rankings.for_budget(b.name)),
                                  static_cast<double>(b.bytes));
      const EvaluationRow* best = pick ? by_id.at(pts[*pick].id) : nullptr;
      const PresetCheck* check = nullptr;
      for (const auto& c : report_.checks) {
        if (c.name == b.name) check = &c;
      }
      const std::string path =
          (std::filesystem::path(opt_.presets_dir) / (b.name + ".env")).string();
      if (check && check->verdict != "kept") {
        keep_unverified(b, night, *check, best, path);
        continue;
      }
      const bool beats =
          best && (!check || (best->config_key != check->config_key &&
                              best->speedup > check->measured_speedup * (1.0 + kNoiseThreshold)));
      if (!beats || !report_.failure.empty()) {
        if (check) {
          record(b, night, *check, /*demoted=*/false);
        } else {
          report_.notes.push_back(fmt::format("{}: nothing accepted fits {}", b.name,
                                              format_gib(static_cast<double>(b.bytes))));
        }
        continue;
      }
      files[path] = replace_preset(b, night, *best, check, path);
    }
    return files;
  }

  void add_pending_rows() {
    for (const auto& r : pending_rows_) store_.add_preset(r);
  }

 private:
  void judge(SearchContext& search, const CurrentPreset& p, PresetCheck& check) {
    if (!p.invalid.empty()) {
      check.verdict = "demoted";
      check.reason = "no longer valid against tonight's trainer manifest: " + p.invalid;
      return;
    }
    if (p.config.empty()) {
      check.verdict = "kept";
      check.measured_speedup = 1.0;
      check.reason = "all defaults (the baseline)";
      return;
    }
    const Evaluation& e = search.evaluate(p.config, c_.trial.steps, "reverify");
    check.evaluation_id = e.id;
    check.measured_speedup = e.speedup;
    check.projected_peak_bytes = e.projected_peak_bytes;
    const double floor = opt_.regression_limit * p.recorded_speedup;
    if (!e.correct()) {
      check.verdict = "demoted";
      check.reason = fmt::format("fails tonight: {}: {}", to_string(e.disposition), e.reason);
    } else if (p.budget_bytes > 0 && e.projected_peak_bytes > p.budget_bytes) {
      check.verdict = "demoted";
      check.reason = fmt::format("projected peak {} no longer fits its budget {}",
                                 format_gib(e.projected_peak_bytes), format_gib(p.budget_bytes));
    } else if (p.recorded_speedup > 0 && e.speedup < floor) {
      check.verdict = "demoted";
      check.reason = fmt::format(
          "speedup {:.3f}x is below the regression limit {:.2f} x the recorded {:.3f}x ({:.3f}x)",
          e.speedup, opt_.regression_limit, p.recorded_speedup, floor);
    } else {
      check.verdict = "kept";
      check.reason = fmt::format("passes the {} gate, {:.3f}x (recorded {:.3f}x, limit {:.3f}x)",
                                 e.gate_class, e.speedup, p.recorded_speedup, floor);
    }
  }

  // A budget whose current preset was not kept tonight (skipped, demoted or unverified):
  // its file stays as it is.
  void keep_unverified(const NamedBudget& b, const NightContext& night, const PresetCheck& check,
                       const EvaluationRow* best, const std::string& path) {
    if (check.verdict == "skipped") {
      report_.notes.push_back(fmt::format("{}: {}; {} left as it is", b.name, check.reason, path));
    } else if (check.verdict == "demoted") {
      record(b, night, check, /*demoted=*/true);
      report_.notes.push_back(fmt::format(
          "{}: demoted; {} left as it is{}", b.name, path,
          best ? fmt::format(" (tonight's best for this budget: `{}` {:.3f}x)",
                             config_label(config_from_key(best->config_key)), best->speedup)
               : std::string()));
    } else {
      report_.notes.push_back(fmt::format("{}: not re-verified tonight; left as it is", b.name));
    }
  }

  // Tonight's best replaces (or is) the budget's preset: its file's content; its row is
  // added once the files are written.
  std::string replace_preset(const NamedBudget& b, const NightContext& night,
                             const EvaluationRow& best, const PresetCheck* check,
                             const std::string& path) {
    PresetWrite w;
    w.name = b.name;
    w.path = path;
    w.config_key = best.config_key;
    w.speedup = best.speedup;
    if (check) {
      w.replaced_config_key = check->config_key.empty() ? "(defaults)" : check->config_key;
      w.replaced_speedup = check->measured_speedup;
      spdlog::info(
          "preset {}: `{}` {:.3f}x beats the current `{}` {:.3f}x beyond the noise threshold: "
          "replacing {}",
          b.name, best.config_key, best.speedup, check->config_key, check->measured_speedup, path);
    } else {
      spdlog::info("preset {}: new, `{}` {:.3f}x", b.name, best.config_key, best.speedup);
    }
    std::string content = render_nightly_preset(night, b.name, static_cast<double>(b.bytes), best);
    PresetParse parse = parse_preset(content, manifest_);
    if (!parse.ok())
      throw std::logic_error("rendered preset does not re-parse: " + parse.errors.front());
    PresetRow row;
    row.campaign_id = report_.campaign_id;
    row.name = b.name;
    row.path = path;
    row.config_key = best.config_key;
    row.fingerprint_hash = night.fingerprint_hash;
    row.content = content;
    row.budget_bytes = static_cast<double>(b.bytes);
    row.speedup = best.speedup;
    row.speedup_spread = best.speedup_spread;
    row.projected_peak_bytes = best.projected_peak_bytes;
    row.evaluation_id = best.id;
    row.trial_ids = best.trial_ids;
    pending_rows_.push_back(row);
    report_.written.push_back(w);
    return content;
  }

  // Tonight's row for a preset that stays in place: the trend gets one point per night.
  void record(const NamedBudget& b, const NightContext& night, const PresetCheck& check,
              bool demoted) {
    auto it = current_.find(b.name);
    if (it == current_.end()) return;
    PresetRow row;
    row.campaign_id = report_.campaign_id;
    row.name = b.name;
    row.path = it->second.path;
    row.config_key = check.config_key;
    row.fingerprint_hash = night.fingerprint_hash;
    row.content = it->second.content;
    row.budget_bytes =
        it->second.budget_bytes > 0 ? it->second.budget_bytes : static_cast<double>(b.bytes);
    row.speedup = check.measured_speedup;
    row.projected_peak_bytes = check.projected_peak_bytes;
    row.evaluation_id = check.evaluation_id;
    for (const auto& e : store_.evaluations(report_.campaign_id)) {
      if (check.evaluation_id && e.id == *check.evaluation_id) {
        row.trial_ids = e.trial_ids;
        row.speedup_spread = e.speedup_spread;
      }
    }
    std::int64_t id = store_.add_preset(row);
    if (demoted) demote_preset(store_, id, check.reason);
  }

  // Tonight's campaign row: a killed night is resumed by a rerun within kResumeWithinHours.
  std::int64_t open() {
    CampaignRow row = new_campaign_row(c_, manifest_);
    row.options["nightly"] = {{"presets_dir", opt_.presets_dir},
                              {"regression_limit", opt_.regression_limit}};
    row.note = "nightly";
    std::int64_t cid = 0;
    if (auto prev = resumable_campaign(store_, row)) {
      cid = *prev;
      report_.resumed = true;
      spdlog::info("resuming tonight's interrupted nightly campaign {}", cid);
    } else {
      cid = store_.create_campaign(row);
      spdlog::info("nightly campaign {} started in {}", cid, c_.db_path);
    }
    report_.campaign_id = cid;
    begin_nightly_run(store_, cid, c_.budget.minutes);
    return cid;
  }

  const NightlyOptions& opt_;
  const CampaignOptions& c_;
  const Manifest& manifest_;
  Store& store_;
  NightlyReport report_;
  std::int64_t env_id_ = 0, warm_env_ = 0;
  std::map<std::string, CurrentPreset> current_;
  std::vector<PresetRow> pending_rows_;
};

}  // namespace

NightlyReport run_nightly(const NightlyOptions& in, const Manifest& full_manifest) {
  NightlyOptions opt = in;
  opt.campaign = with_defaults(in.campaign);
  opt.validate();
  // Only the switches that apply to the campaign's workload are searched (protocol §1).
  const Manifest manifest = full_manifest.for_workload(opt.campaign.workload);
  opt.campaign = prepare_campaign(opt.campaign, manifest);
  const CampaignOptions& c = opt.campaign;
  namespace fs = std::filesystem;
  Store store(c.db_path);

  Night night(opt, manifest, store);
  NightlyReport& report = night.report();
  night.measured(drive_campaign(store, c, manifest, night.hooks()));
  const std::int64_t cid = report.campaign_id;

  NightContext ctx;
  ctx.campaign = *store.campaign(cid);
  ctx.manifest = &manifest;
  if (ctx.campaign.environment_id) {
    ctx.fingerprint_hash = store.environment_hash(*ctx.campaign.environment_id).value_or("");
    ctx.device = device_kind(environment_json(store, *ctx.campaign.environment_id));
  }
  std::map<std::string, std::string> files;
  if (report.failure.empty() || !report.checks.empty()) files = night.decide_presets(ctx);
  report.trials_reused = reused_trials(store, cid);
  bool foreign = false;  // the directory holds another device's presets: its README is theirs
  for (const auto& ch : report.checks) foreign = foreign || ch.verdict == "skipped";
  const std::string readme = (fs::path(opt.presets_dir) / "README.md").string();
  if (foreign) {
    report.notes.push_back(readme +
                           " left as it is: it describes presets measured on another device kind");
  } else {
    files[readme] = render_nightly_readme(ctx, report);
  }
  fs::create_directories(opt.presets_dir);
  for (const auto& [path, content] : files) write_file_atomic(path, content);
  night.add_pending_rows();
  store.finish_campaign(cid);
  finish_nightly_run(store, cid, report.exit_code(), report.to_json());
  spdlog::info("nightly campaign {} finished{}: {} trainer runs, {} reused, exit {}", cid,
               report.budget_spent ? " (budget spent)" : "", report.trials_run,
               report.trials_reused, report.exit_code());
  return report;
}

}  // namespace sg::agent::nightly
