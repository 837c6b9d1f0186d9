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
#include "agent/presets/emit_campaign.hpp"
#include "agent/presets/preset_device.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/presets/preset_header.hpp"
#include "agent/protocol/kernel_params.hpp"
#include "agent/ranking/pareto.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

using nlohmann::json;

std::string use_line(const Provenance& p, const std::string& path) {
  std::string use = fmt::format("set -a; . {}; set +a; {} run ...", path, p.trainer);
  if (p.reference_trainer) use += fmt::format(" (or {} run --preset {} ...)", p.trainer, path);
  return use;
}

const EvaluationRow* own_effect(const std::vector<EvaluationRow>& evals, const Manifest& m,
                                const std::string& name, int full_steps) {
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

namespace {

std::string fingerprint_line(const json& fp, const std::string& hash) {
  auto str = [&](const char* k) {
    return fp.contains(k) ? (fp[k].is_string() ? fp[k].get<std::string>() : fp[k].dump())
                          : std::string("?");
  };
  return fmt::format(
      "{} (device {} '{}', sm {}, driver {}, cuda {}, cudnn {}, nccl {}, torch {}, build {}, "
      "threads {}, deterministic {}, world {})",
      hash, str("device"), str("device_name"), str("sm_count"), str("driver"), str("cuda"),
      str("cudnn"), str("nccl"), str("torch"), str("git_sha"), str("threads"), str("deterministic"),
      str("world_size"));
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
            fmt::format("paired finals at the target micro-batch {}, {} rounds",
                        r.target_micro_batch, r.rounds),
            speed_text(r.speedup, r.lo, r.hi, r.rounds, r.spread)};
  }
  return {e.speedup, e.speedup_spread,
          fmt::format("paired ABAB repeats vs the baseline, {} steps", e.steps),
          speed_text(e.speedup, e.speedup_lo, e.speedup_hi, e.pairs, e.speedup_spread)};
}

EmitCampaign load_campaign(Store& store, std::optional<std::int64_t> campaign_id,
                           const std::string& out_dir) {
  std::optional<CampaignRow> camp =
      campaign_id ? store.campaign(*campaign_id) : store.latest_campaign(false);
  if (!camp) {
    throw UsageError(campaign_id
                         ? fmt::format("no campaign {} in the database", *campaign_id)
                         : std::string("the database has no campaign; run `speedgate tune` first"));
  }
  EmitCampaign c;
  c.camp = *camp;
  // The campaign searched only its workload's switches; the README lists those.
  c.manifest = parse_manifest(camp->manifest).for_workload(camp->workload);
  c.full_steps = camp->options.value("steps", 0);
  c.evals = store.evaluations(camp->id);
  json fp = json::object();
  if (camp->environment_id) {
    if (const auto env = store.environment(*camp->environment_id)) {
      c.fp_hash = env->hash;
      fp = env->fingerprint;
      c.fp_text = fingerprint_line(fp, c.fp_hash);
    }
  }
  c.deterministic = camp->deterministic.value_or(false);
  c.rounding_band = !store.rounding_bands(camp->id).empty();
  c.prov.device = device_kind(fp);
  if (c.prov.device.empty()) c.prov.device = "an unrecorded device";
  c.prov.trainer = camp->trainer;
  c.prov.reference_trainer = c.manifest.trainer == "speedgate-train";
  c.out_dir = out_dir;
  return c;
}

// The .env file's provenance comments (its header).
std::vector<std::string> preset_comments(const EmitCampaign& c, const TargetRanks& rankings,
                                         const std::string& name, double bytes,
                                         const EvaluationRow& e, const TargetRank& rank,
                                         const Headline& head, const std::string& path) {
  PresetHeader h;
  h.name = name;
  h.budget_bytes = bytes;
  h.generator = "speedgate";
  h.device = c.prov.device;
  h.use = use_line(c.prov, path);
  h.fingerprint = c.fp_text;
  h.speedup = fmt::format("{} ({})", head.figure, head.basis);
  h.campaign_speedup = fmt::format(
      "{} (paired ABAB repeats vs the baseline, {} steps; what `speedgate nightly` re-verifies)",
      speed_text(e.speedup, e.speedup_lo, e.speedup_hi, e.pairs, e.speedup_spread), e.steps);
  h.target_micro_batch = rankings.target_micro_batch();
  h.deterministic = c.deterministic;
  std::vector<std::string> comments = preset_header_comments(h, c.camp, c.manifest, e);
  if (rank.measured_at_target()) {
    comments.push_back("ranked at the target: " + rank.describe());
  } else if (rankings.any_at_target()) {
    comments.push_back("ranked by the speedup above (not measured at the target micro-batch)");
  }
  if (config_from_key(e.config_key).empty()) {
    comments.push_back(
        rank.basis == TargetRank::Basis::finals
            ? "no finalist beat the baseline paired at the target micro-batch: all defaults"
            : "no accepted switch beats the baseline within this budget: all defaults");
  }
  return comments;
}

// Renders one budget's preset (the content is checked to re-parse to its configuration).
WrittenPreset render_preset_for(const EmitCampaign& c, const TargetRanks& rankings,
                                const std::string& name, std::int64_t bytes, const EvaluationRow& e,
                                const TargetRank& rank) {
  const Config cfg = config_from_key(e.config_key);
  const Headline head = headline(e, rank);
  const std::string path = (std::filesystem::path(c.out_dir) / (name + ".env")).string();
  const std::string content = render_preset(
      preset_comments(c, rankings, name, static_cast<double>(bytes), e, rank, head, path), cfg,
      c.manifest);
  PresetParse check = parse_preset(content, c.manifest);
  if (!check.ok() || check.config != cfg) {
    throw std::logic_error("rendered preset does not re-parse: " +
                           (check.errors.empty() ? "" : check.errors.front()));
  }
  WrittenPreset w;
  PresetRow& row = w.row;
  row.campaign_id = c.camp.id;
  row.name = name;
  row.path = path;
  row.config_key = e.config_key;
  row.fingerprint_hash = c.fp_hash;
  row.content = content;
  row.budget_bytes = static_cast<double>(bytes);
  row.speedup = head.speedup;  // the headline: what the dashboard and the API show
  row.speedup_spread = head.spread;
  row.projected_peak_bytes = e.projected_peak_bytes;
  row.evaluation_id = e.id;
  row.trial_ids = e.trial_ids;
  w.rank = rank;
  w.figure = head.figure;
  w.basis = head.basis;
  return w;
}

json written_entry(const WrittenPreset& w, const EvaluationRow& e) {
  const Config cfg = config_from_key(e.config_key);
  return {{"written", true},
          {"path", w.row.path},
          {"config", json(cfg)},
          {"speedup", w.row.speedup},
          {"spread", w.row.speedup_spread},
          {"speedup_basis", w.basis},
          {"campaign_speedup", e.speedup},
          {"projected_peak_bytes", e.projected_peak_bytes},
          {"trial_ids", e.trial_ids},
          {"evaluation_id", e.id},
          {"rank_speedup", w.rank.speedup},
          {"ranked_at_target", w.rank.measured_at_target()},
          {"ranked_by", w.rank.basis == TargetRank::Basis::finals  ? "finals"
                        : w.rank.basis == TargetRank::Basis::probe ? "probe"
                                                                   : "campaign"}};
}

}  // namespace

EmitResult emit_presets(Store& store, std::optional<std::int64_t> campaign_id,
                        const std::string& out_dir) {
  const EmitCampaign c = load_campaign(store, campaign_id, out_dir);
  const TargetRanks rankings(store, c.camp, c.evals);
  std::vector<FrontierPoint> pts;
  std::vector<const EvaluationRow*> rows;
  const EvaluationRow* base = nullptr;
  for (const auto& e : c.evals) {
    if (e.steps != c.full_steps || e.disposition != Disposition::accepted) continue;
    pts.push_back({e.id, e.speedup, e.projected_peak_bytes, config_from_key(e.config_key).size()});
    rows.push_back(&e);
    if (e.config_key.empty()) base = &e;
  }
  EmitResult result;
  result.summary = {{"campaign", c.camp.id}, {"out", out_dir}, {"presets", json::array()}};
  std::vector<WrittenPreset> written;
  const json budgets =
      c.camp.options.value("memory_budgets", json::object());  // kept alive for the loop
  for (const auto& [name, bytes_json] : budgets.items()) {
    const std::int64_t bytes = bytes_json.get<std::int64_t>();
    const auto ranks = rankings.for_budget(name);
    const auto pick = pick_for_budget(rankings.ranked(pts, ranks), static_cast<double>(bytes));
    json entry = {{"name", name}, {"budget_bytes", bytes}};
    if (!pick) {
      result.all_budgets_met = false;
      entry["written"] = false;
      entry["reason"] =
          base ? fmt::format("even the baseline's projected peak {} exceeds {}",
                             format_gib(base->projected_peak_bytes),
                             format_gib(static_cast<double>(bytes)))
               : std::string("no accepted configuration (no baseline) in this campaign");
      spdlog::error("preset {}: {}", name, entry["reason"].get<std::string>());
      result.summary["presets"].push_back(entry);
      continue;
    }
    const EvaluationRow& e = *rows[*pick];
    written.push_back(render_preset_for(c, rankings, name, bytes, e, ranks.at(e.id)));
    entry.update(written_entry(written.back(), e));
    result.summary["presets"].push_back(entry);
  }
  std::map<std::string, std::string> files;  // path -> content; rendered first, then written
  for (const auto& w : written) files[w.row.path] = w.row.content;
  files[(std::filesystem::path(out_dir) / "README.md").string()] =
      render_presets_readme(c, written, rankings.target_micro_batch(), rankings.any_at_target());
  std::filesystem::create_directories(out_dir);
  for (const auto& [path, content] : files) write_file_atomic(path, content);
  for (const auto& w : written) store.add_preset(w.row);
  return result;
}

}  // namespace sg::agent
