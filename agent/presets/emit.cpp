#include "agent/presets/emit.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/common/units.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/protocol/kernel_params.hpp"
#include "agent/presets/preset_device.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/ranking/pareto.hpp"
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

// A switch's own effect: the evaluation of that switch alone (with, at most, a variant of
// its own kernel family): its single-switch screen, or its confirmation at the full step
// budget when there is one; null when it was only measured inside combinations.
const EvaluationRow* own_effect(const std::vector<EvaluationRow>& evals, const Manifest& m, const std::string& name,
                                int full_steps) {
  auto alone = [&](const Config& c) {
    if (!c.count(name)) return false;
    for (const auto& [k, v] : c) {
      const KernelFamily* f = k == name ? nullptr : find_kernel_family(m, k);
      if (k != name && (!f || f->switch_name != name)) return false;
    }
    return true;
  };
  const EvaluationRow* best = nullptr;
  for (const auto& e : evals) {
    if (!alone(config_from_key(e.config_key))) continue;
    if (!best || (e.steps == full_steps && best->steps != full_steps)) best = &e;
  }
  return best;
}

std::string table_cell(std::string s) {
  for (auto& ch : s) {
    if (ch == '|' || ch == '\n') ch = ' ';
  }
  return s;
}

// What a preset was measured on and with, for its header and README: "cpu" or the GPU.
struct Provenance {
  std::string device;   // device_kind() of the fingerprint ("cpu", "NVIDIA H200")
  std::string trainer;  // the executable the campaign ran
  bool reference_trainer = false;  // speedgate-train: it also takes --preset FILE
};

std::string use_line(const Provenance& p, const std::string& path) {
  std::string use = fmt::format("set -a; . {}; set +a; {} run ...", path, p.trainer);
  if (p.reference_trainer) use += fmt::format(" (or {} run --preset {} ...)", p.trainer, path);
  return use;
}

// The one figure a preset is known by: the paired speedup at the target micro-batch
// (finals) where the campaign measured one, else its paired speedup at the campaign's
// micro-batch.
struct Headline {
  double speedup = 0, spread = 0;
  std::string basis;
  std::string figure;  // the speedup with its interval (gate/speed_stats.hpp)
};

Headline headline(const EvaluationRow& e, const TargetRank& r) {
  if (r.basis == TargetRank::Basis::finals) {
    return {r.speedup, r.spread,
            fmt::format("paired finals at the target micro-batch {}, {} rounds", r.target_micro_batch, r.rounds),
            speed_text(r.speedup, r.lo, r.hi, r.rounds, r.spread)};
  }
  return {e.speedup, e.speedup_spread, fmt::format("paired ABAB repeats vs the baseline, {} steps", e.steps),
          speed_text(e.speedup, e.speedup_lo, e.speedup_hi, e.pairs, e.speedup_spread)};
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
    if (const auto env = store.environment(*camp->environment_id)) {
      fp_hash = env->hash;
      fp = env->fingerprint;
      fp_text = fingerprint_line(fp, fp_hash);
    }
  }
  const bool deterministic = camp->deterministic.value_or(false);
  const json opts = camp->options;
  Provenance prov;
  prov.device = device_kind(fp);
  if (prov.device.empty()) prov.device = "an unrecorded device";
  prov.trainer = camp->trainer;
  prov.reference_trainer = manifest.trainer == "speedgate-train";
  const bool on_cpu = prov.device == "cpu";

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
  std::map<std::string, std::string> headline_basis;  // per written preset: where its figure comes from
  std::map<std::string, std::string> headline_figure;  // per written preset: the figure with its interval
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
    const TargetRank& rank = ranks.at(e.id);
    chosen_ranks[name] = rank;
    const Headline head = headline(e, rank);
    const std::string path = (std::filesystem::path(out_dir) / (name + ".env")).string();
    std::vector<std::string> comments = {
        on_cpu ? fmt::format("speedgate preset '{}' for CPU hosts (memory budget {}; generated by speedgate {} {})", name,
                             format_gib(static_cast<double>(bytes)), SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA)
               : fmt::format("speedgate preset '{}' for {} GPUs with {} (generated by speedgate {} {})", name,
                             prov.device, format_gib(static_cast<double>(bytes)), SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA),
        fmt::format("measured on: {} with the trainer {} ({} {})", prov.device, prov.trainer, manifest.trainer,
                    manifest.version),
        fmt::format("use: {}", use_line(prov, path)),
        fmt::format("campaign: {} ({} {}, started {})", camp->id, camp->workload, camp->size, camp->created_at),
        fmt::format("trial ids: {}", join_ids(e.trial_ids)),
        fmt::format("fingerprint: {}", fp_text),
        fmt::format("speedup: {} ({})", head.figure, head.basis),
        fmt::format("campaign speedup: {} (paired ABAB repeats vs the baseline, {} steps; what "
                    "`speedgate nightly` re-verifies)",
                    speed_text(e.speedup, e.speedup_lo, e.speedup_hi, e.pairs, e.speedup_spread), e.steps),
        fmt::format("projected peak: {} at micro-batch {}, world size {}, ZeRO {} (budget {})",
                    format_gib(e.projected_peak_bytes), rankings.target_micro_batch(),
                    opts.value("target_world_size", 1), opts.value("zero_stage", 0), format_gib(static_cast<double>(bytes))),
        fmt::format("gate: {}{}", e.gate_class,
                    deterministic ? "" : " (NON-DETERMINISTIC environment: everything gated by tolerance)"),
    };
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
    files[path] = content;
    PresetRow row;
    row.campaign_id = camp->id;
    row.name = name;
    row.path = path;
    row.config_key = e.config_key;
    row.fingerprint_hash = fp_hash;
    row.content = content;
    row.budget_bytes = static_cast<double>(bytes);
    row.speedup = head.speedup;  // the headline: what the dashboard and the API show
    row.speedup_spread = head.spread;
    row.projected_peak_bytes = e.projected_peak_bytes;
    row.evaluation_id = e.id;
    row.trial_ids = e.trial_ids;
    preset_rows.push_back(row);
    headline_basis[name] = head.basis;
    headline_figure[name] = head.figure;
    entry.update({{"written", true}, {"path", path}, {"config", json(cfg)}, {"speedup", head.speedup},
                  {"spread", head.spread}, {"speedup_basis", head.basis}, {"campaign_speedup", e.speedup}, {"projected_peak_bytes", e.projected_peak_bytes},
                  {"trial_ids", e.trial_ids}, {"evaluation_id", e.id}, {"rank_speedup", rank.speedup},
                  {"ranked_at_target", rank.measured_at_target()},
                  {"ranked_by", rank.basis == TargetRank::Basis::finals  ? "finals"
                                : rank.basis == TargetRank::Basis::probe ? "probe"
                                                                         : "campaign"}});
    result.summary["presets"].push_back(entry);
  }

  // README.md: the presets with their headline figure, then every switch of the
  // manifest with its doc, default, class and its own measured gain.
  std::string md = "# speedgate presets\n\n";
  md += fmt::format("Generated by `speedgate presets emit` from campaign {} ({} {}, {}), speedgate {} {}.\n"
                    "Do not edit: re-run the campaign and emit again.\n\n",
                    camp->id, camp->workload, camp->size, camp->created_at, SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA);
  md += fmt::format("Measured on **{}** with the trainer `{}` ({} {}). These presets are for that device and "
                    "that trainer: on another device kind `speedgate presets check` and `speedgate nightly` skip "
                    "them.\n\n",
                    prov.device, prov.trainer, manifest.trainer, manifest.version);
  md += fmt::format("Environment fingerprint: {}\n\n", fp_text);
  md += deterministic ? "Determinism preflight: passed (baseline twice at seed s0 bitwise equal).\n\n"
                      : "**Determinism preflight FAILED: every switch was gated by tolerance, none is claimed bitwise.**\n\n";
  md += "## Presets\n\n| file | budget | switches | speedup | where the figure comes from | projected peak | trials |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& p : preset_rows) {
    md += fmt::format("| `{}.env` | {} | `{}` | {} | {} | {} | {} |\n", p.name, format_gib(p.budget_bytes),
                      p.config_key.empty() ? "(defaults)" : p.config_key, headline_figure.at(p.name),
                      headline_basis.at(p.name), format_gib(p.projected_peak_bytes), join_ids(p.trial_ids));
  }
  md += fmt::format("\nThe speedup is each preset's one headline figure, the same in its header (`# speedup:`), "
                    "`speedgate report`, the dashboard and the API: the paired speedup at the target micro-batch "
                    "{} (the `finals` strategy) where the campaign measured one, else the paired ABAB speedup at "
                    "the campaign's micro-batch; the bracket is its one-sided 95 % interval (docs/controller.md, "
                    "\"Speed verdicts\").\n",
                    rankings.target_micro_batch());
  if (ranked_at_target) {
    md += "Presets were chosen by throughput at the target micro-batch where the campaign measured it there "
          "(docs/controller.md, \"Presets\"):";
    for (const auto& p : preset_rows) {
      const TargetRank& r = chosen_ranks.at(p.name);
      md += r.measured_at_target() ? fmt::format(" {} {};", p.name, r.describe()) : fmt::format(" {} not measured there;", p.name);
    }
    md.back() = '.';
    md += "\n";
  }
  md += fmt::format("\nUse (the switches are SG_* environment variables, docs/protocol.md): `{}`.\n\n",
                    use_line(prov, (std::filesystem::path(out_dir) / "fast.env").string()));
  md += "## Switches\n\n"
        "Own gain: the switch alone against the baseline (its single-switch evaluation: the screen, or its "
        "confirmation at the full step budget when it had one), paired ABAB, with its one-sided 95 % "
        "interval. A preset's figure is its combination's, not the sum of these.\n\n"
        "| switch | env | default | what it does | class | keeps training bitwise identical | own gain |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& s : manifest.switches) {
    std::string measured = "not measured alone";
    if (!s.available) {
      measured = "unavailable here: " + s.unavailable_reason;
    } else if (const EvaluationRow* e = own_effect(evals, manifest, s.name, full_steps)) {
      const std::string where = fmt::format("`{}`, {} steps, evaluation {}", e->config_key, e->steps, e->id);
      measured = e->disposition == Disposition::accepted && e->speedup > 0
                     ? fmt::format("{} ({})", speed_text(e->speedup, e->speedup_lo, e->speedup_hi, e->pairs, e->speedup_spread), where)
                     : fmt::format("{}: {} ({})", to_string(e->disposition), e->reason, where);
    }
    std::string bitwise = s.bitwise() ? (deterministic ? "yes" : "yes by class (not verified: non-deterministic run)")
                                      : "no (gated by the seed band)";
    md += fmt::format("| {} | `{}` | `{}` | {} | {} ({}) | {} | {} |\n", s.name, s.env, s.default_value,
                      table_cell(s.doc), s.identity, s.effect, bitwise, table_cell(measured));
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
