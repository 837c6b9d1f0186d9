#include "agent/presets/emit.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/common/units.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/presets/target_rank.hpp"
#include "agent/search/pareto.hpp"
#include "agent/store/store.hpp"
#include "speedgate_build_info.hpp"

namespace sg::agent {

using nlohmann::json;

namespace {

std::string join_ids(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

std::string fingerprint_line(const json& fp, const std::string& hash) {
  auto str = [&](const char* k) {
    return fp.contains(k) ? (fp[k].is_string() ? fp[k].get<std::string>() : fp[k].dump()) : std::string("?");
  };
  return fmt::format("{} (device {} '{}', sm {}, driver {}, cuda {}, cudnn {}, nccl {}, torch {}, build {}, "
                     "threads {}, deterministic {}, world {})",
                     hash, str("device"), str("device_name"), str("sm_count"), str("driver"), str("cuda"),
                     str("cudnn"), str("nccl"), str("torch"), str("git_sha"), str("threads"), str("deterministic"),
                     str("world_size"));
}

// The measured effect of one switch: its smallest accepted-or-not evaluation,
// preferring the full step budget.
const EvaluationRow* effect_of(const std::vector<EvaluationRow>& evals, const std::string& name, int full_steps) {
  const EvaluationRow* best = nullptr;
  for (const auto& e : evals) {
    Config c = config_from_key(e.config_key);
    if (!c.count(name)) continue;
    auto rank = [&](const EvaluationRow& x) {
      return std::make_tuple(config_from_key(x.config_key).size(), x.steps == full_steps ? 0 : 1);
    };
    if (!best || rank(e) < rank(*best)) best = &e;
  }
  return best;
}

}  // namespace

EmitResult emit_presets(Store& store, std::optional<std::int64_t> campaign_id, const std::string& out_dir) {
  std::optional<CampaignRow> camp = campaign_id ? store.campaign(*campaign_id) : store.latest_campaign(false);
  if (!camp) {
    throw UsageError(campaign_id ? fmt::format("no campaign {} in the database", *campaign_id)
                                 : std::string("the database has no campaign; run `speedgate tune` first"));
  }
  // The campaign searched only its workload's switches; the README lists those.
  Manifest manifest = parse_manifest(camp->manifest).for_workload(camp->workload);
  const int full_steps = camp->options.value("steps", 0);
  std::vector<EvaluationRow> evals = store.evaluations(camp->id);
  const TargetRanks rankings(store, *camp, evals);
  const bool ranked_at_target = rankings.any_at_target();
  std::vector<FrontierPoint> pts;
  std::vector<const EvaluationRow*> rows;
  const EvaluationRow* base = nullptr;
  for (const auto& e : evals) {
    if (e.steps != full_steps || e.disposition != Disposition::accepted) continue;
    pts.push_back({e.id, e.speedup, e.projected_peak_bytes, config_from_key(e.config_key).size()});
    rows.push_back(&e);
    if (e.config_key.empty()) base = &e;
  }
  std::string fp_hash, fp_text = "unknown";
  json fp = json::object();
  if (camp->environment_id) {
    SQLite::Statement q(store.db(), "SELECT fingerprint_hash, fingerprint_json FROM environments WHERE id = ?");
    q.bind(1, *camp->environment_id);
    if (q.executeStep()) {
      fp_hash = q.getColumn(0).getString();
      fp = json::parse(q.getColumn(1).getString(), nullptr, false);
      fp_text = fingerprint_line(fp, fp_hash);
    }
  }
  const bool deterministic = camp->deterministic.value_or(false);
  const json opts = camp->options;

  EmitResult result;
  result.summary = {{"campaign", camp->id}, {"out", out_dir}, {"presets", json::array()}};
  std::map<std::string, std::string> files;  // name -> content
  std::vector<PresetRow> preset_rows;
  std::vector<std::pair<std::string, std::int64_t>> budgets;
  const json budget_map = opts.value("memory_budgets", json::object());
  for (const auto& [name, bytes] : budget_map.items()) {
    budgets.emplace_back(name, bytes.get<std::int64_t>());
  }
  std::map<std::string, TargetRank> chosen_ranks;  // per written preset: what chose it
  for (const auto& [name, bytes] : budgets) {
    const auto ranks = rankings.for_budget(name);
    auto pick = pick_for_budget(rankings.ranked(pts, ranks), static_cast<double>(bytes));
    json entry = {{"name", name}, {"budget_bytes", bytes}};
    if (!pick) {
      result.all_budgets_met = false;
      entry["written"] = false;
      entry["reason"] = base ? fmt::format("even the baseline's projected peak {} exceeds {}",
                                           format_gib(base->projected_peak_bytes), format_gib(static_cast<double>(bytes)))
                             : std::string("no accepted configuration (no baseline) in this campaign");
      spdlog::error("preset {}: {}", name, entry["reason"].get<std::string>());
      result.summary["presets"].push_back(entry);
      continue;
    }
    const EvaluationRow& e = *rows[*pick];
    Config cfg = config_from_key(e.config_key);
    std::vector<std::string> comments = {
        fmt::format("speedgate preset '{}' for GPUs with {} (generated by speedgate {} {})", name,
                    format_gib(static_cast<double>(bytes)), SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA),
        fmt::format("campaign: {} ({} {}, started {})", camp->id, camp->workload, camp->size, camp->created_at),
        fmt::format("trial ids: {}", join_ids(e.trial_ids)),
        fmt::format("fingerprint: {}", fp_text),
        fmt::format("speedup: {:.3f}x +- {:.3f} (median of paired ABAB repeats vs the baseline, {} steps)", e.speedup,
                    e.speedup_spread, e.steps),
        fmt::format("projected peak: {} at micro-batch {}, world size {}, ZeRO {} (budget {})",
                    format_gib(e.projected_peak_bytes), rankings.target_micro_batch(),
                    opts.value("target_world_size", 1), opts.value("zero_stage", 0), format_gib(static_cast<double>(bytes))),
        fmt::format("gate: {}{}", e.gate_class,
                    deterministic ? "" : " (NON-DETERMINISTIC environment: everything gated by tolerance)"),
    };
    const TargetRank& rank = ranks.at(e.id);
    chosen_ranks[name] = rank;
    if (rank.measured_at_target()) {
      comments.push_back("ranked at the target: " + rank.describe());
    } else if (ranked_at_target) {
      comments.push_back("ranked by the speedup above (not measured at the target micro-batch)");
    }
    if (cfg.empty()) {
      comments.push_back(rank.basis == TargetRank::Basis::finals
                             ? "no finalist beat the baseline paired at the target micro-batch: all defaults"
                             : "no accepted switch beats the baseline within this budget: all defaults");
    }
    std::string content = render_preset(comments, cfg, manifest);
    PresetParse check = parse_preset(content, manifest);
    if (!check.ok() || check.config != cfg) {
      throw std::logic_error("rendered preset does not re-parse: " + (check.errors.empty() ? "" : check.errors.front()));
    }
    std::string path = (std::filesystem::path(out_dir) / (name + ".env")).string();
    files[path] = content;
    PresetRow row;
    row.campaign_id = camp->id;
    row.name = name;
    row.path = path;
    row.config_key = e.config_key;
    row.fingerprint_hash = fp_hash;
    row.content = content;
    row.budget_bytes = static_cast<double>(bytes);
    row.speedup = e.speedup;
    row.speedup_spread = e.speedup_spread;
    row.projected_peak_bytes = e.projected_peak_bytes;
    row.evaluation_id = e.id;
    row.trial_ids = e.trial_ids;
    preset_rows.push_back(row);
    entry.update({{"written", true}, {"path", path}, {"config", json(cfg)}, {"speedup", e.speedup},
                  {"spread", e.speedup_spread}, {"projected_peak_bytes", e.projected_peak_bytes},
                  {"trial_ids", e.trial_ids}, {"evaluation_id", e.id}, {"rank_speedup", rank.speedup},
                  {"ranked_at_target", rank.measured_at_target()},
                  {"ranked_by", rank.basis == TargetRank::Basis::finals  ? "finals"
                                : rank.basis == TargetRank::Basis::probe ? "probe"
                                                                         : "campaign"}});
    result.summary["presets"].push_back(entry);
  }

  // README.md: every switch of the manifest, its class and measured effect.
  std::string md = "# speedgate presets\n\n";
  md += fmt::format("Generated by `speedgate presets emit` from campaign {} ({} {}, {}), speedgate {} {}.\n"
                    "Do not edit: re-run the campaign and emit again.\n\n",
                    camp->id, camp->workload, camp->size, camp->created_at, SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA);
  md += fmt::format("Environment fingerprint: {}\n\n", fp_text);
  md += deterministic ? "Determinism preflight: passed (baseline twice at seed s0 bitwise equal).\n\n"
                      : "**Determinism preflight FAILED: every switch was gated by tolerance, none is claimed bitwise.**\n\n";
  md += "## Presets\n\n| file | budget | switches | speedup | projected peak | trials |\n|---|---|---|---|---|---|\n";
  for (const auto& p : preset_rows) {
    md += fmt::format("| `{}.env` | {} | `{}` | {:.3f}x ± {:.3f} | {} | {} |\n", p.name, format_gib(p.budget_bytes),
                      p.config_key.empty() ? "(defaults)" : p.config_key, p.speedup, p.speedup_spread,
                      format_gib(p.projected_peak_bytes), join_ids(p.trial_ids));
  }
  if (ranked_at_target) {
    md += fmt::format("\nThe speedup column is the campaign's (paired, at its micro-batch). Presets were chosen by "
                      "throughput at the target micro-batch {} where the campaign measured it there "
                      "(docs/controller.md, \"Presets\"):",
                      rankings.target_micro_batch());
    for (const auto& p : preset_rows) {
      const TargetRank& r = chosen_ranks.at(p.name);
      md += r.measured_at_target() ? fmt::format(" {} {};", p.name, r.describe()) : fmt::format(" {} not measured there;", p.name);
    }
    md.back() = '.';
    md += "\n";
  }
  md += "\nUse: `set -a; . presets/fast.env; set +a` before `speedgate-train run ...`, or pass `--preset presets/fast.env`.\n\n";
  md += "## Switches\n\n| switch | env | type | class | keeps training bitwise identical | effect | measured |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& s : manifest.switches) {
    std::string measured = "not measured";
    if (!s.available) {
      measured = "unavailable: " + s.unavailable_reason;
    } else if (const EvaluationRow* e = effect_of(evals, s.name, full_steps)) {
      measured = fmt::format("`{}` {}: {}", e->config_key, to_string(e->disposition),
                             e->speedup > 0 ? fmt::format("{:.3f}x ± {:.3f}", e->speedup, e->speedup_spread) : e->reason);
      if (e->projected_peak_bytes > 0) measured += ", peak " + format_gib(e->projected_peak_bytes);
    }
    for (auto& ch : measured) {
      if (ch == '|' || ch == '\n') ch = ' ';
    }
    std::string bitwise = s.bitwise() ? (deterministic ? "yes" : "yes by class (not verified: non-deterministic run)")
                                      : "no (gated by the seed band)";
    md += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} |\n", s.name, s.env, s.type, s.identity, bitwise,
                      s.effect, measured);
  }
  md += "\n## Combinations that fail the gate\n\n";
  bool any = false;
  for (const auto& e : evals) {
    if (e.disposition == Disposition::gate_failed && config_from_key(e.config_key).size() > 1) {
      md += fmt::format("- `{}`: {}\n", e.config_key, e.reason);
      any = true;
    }
  }
  if (!any) md += "none found.\n";
  files[(std::filesystem::path(out_dir) / "README.md").string()] = md;

  std::filesystem::create_directories(out_dir);
  for (const auto& [path, content] : files) write_file_atomic(path, content);
  for (const auto& row : preset_rows) store.add_preset(row);
  return result;
}

}  // namespace sg::agent
