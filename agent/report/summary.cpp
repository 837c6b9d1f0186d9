#include "agent/report/summary.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "agent/common/errors.hpp"
#include "agent/common/json_array.hpp"
#include "agent/common/units.hpp"
#include "agent/gate/speed_stats.hpp"
#include "agent/protocol/config.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

using nlohmann::json;

namespace {

json campaign_json(const CampaignRow& camp) {
  json c = {{"id", camp.id},
            {"workload", camp.workload},
            {"size", camp.size},
            {"state", camp.state},
            {"created_at", camp.created_at},
            {"finished_at", camp.finished_at},
            {"trainer", camp.trainer},
            {"note", camp.note},
            {"options", camp.options}};
  c["deterministic"] = camp.deterministic ? json(*camp.deterministic) : json(nullptr);
  return c;
}

// Trainer runs counted in total and by disposition, state and purpose.
json trial_counts(Store& store, std::int64_t campaign_id) {
  std::map<std::string, int> by_disp, by_state, by_purpose;
  int total = 0;
  for (const auto& t : store.trials(campaign_id)) {
    ++total;
    by_state[t.state]++;
    by_purpose[t.purpose]++;
    // unjudged: ran fine, its evaluation was cut by the budget
    by_disp[t.disposition ? std::string(to_string(*t.disposition))
                          : (t.run_ok ? "unjudged" : "none")]++;
  }
  return {{"total", total},
          {"by_disposition", by_disp},
          {"by_state", by_state},
          {"by_purpose", by_purpose}};
}

// The speedup and its interval, as speed_of() reads them back for the text report.
json speed_json(double speedup, double spread, double lo, double hi) {
  return {{"speedup", speedup},
          {"spread", spread},  // NaN (null in JSON): not paired
          {"speedup_lo", lo},
          {"speedup_hi", hi}};
}

json evaluation_json(const EvaluationRow& e) {
  json j = {{"id", e.id},
            {"config", json(config_from_key(e.config_key))},
            {"config_key", e.config_key},
            {"steps", e.steps},
            {"strategy", e.strategy},
            {"disposition", std::string(to_string(e.disposition))},
            {"gate_class", e.gate_class},
            {"samples_per_s", e.samples_per_s},
            {"projected_peak_bytes", std::isnan(e.projected_peak_bytes)
                                         ? json(nullptr)
                                         : json(e.projected_peak_bytes)},  // null: not probed
            {"on_frontier", e.on_frontier},
            {"reason", e.reason},
            {"trial_ids", e.trial_ids},
            {"pairs", e.pairs}};
  j.update(speed_json(e.speedup, e.speedup_spread, e.speedup_lo, e.speedup_hi));
  return j;
}

// Every evaluation, the frontier, the best accepted one at the full step budget, the
// full-budget baseline (when there is one) and the counts by disposition, into `s`.
void add_evaluations(Store& store, const CampaignRow& camp, json& s) {
  json evals = json::array(), frontier = json::array();
  json best = nullptr;
  const int full = camp.options.value("steps", 0);
  std::map<std::string, int> eval_disp;
  for (const auto& e : store.evaluations(camp.id)) {
    json j = evaluation_json(e);
    eval_disp[std::string(to_string(e.disposition))]++;
    if (e.config_key.empty() && e.steps == full) s["baseline"] = j;
    if (e.on_frontier) frontier.push_back(j);
    if (e.steps == full && e.disposition == Disposition::accepted && !std::isnan(e.speedup) &&
        (best.is_null() || e.speedup > best["speedup"].get<double>())) {
      best = j;
    }
    evals.push_back(std::move(j));
  }
  s["evaluations"] = evals;
  s["evaluations_by_disposition"] = eval_disp;
  s["frontier"] = frontier;
  s["best"] = best;
}

json host_noise_json(const HostNoiseRow& n) {
  return {{"steps", n.steps},
          {"micro_batch", n.micro_batch},
          {"pairs", n.pairs},
          {"sd_log_ratio", n.sd_log_ratio},
          {"detectable_speedup", n.detectable_speedup},
          {"resolution", n.resolution},
          {"min_effect", n.min_effect},
          {"max_repeats", n.max_repeats}};
}

json rounding_band_json(const RoundingBandRow& b) {
  return {{"steps", b.steps},
          {"perturb_eps", b.perturb_eps},
          {"seeds", b.seeds},
          {"curve_rms", b.curve_rms},
          {"eval_loss_abs", b.eval_loss_abs},
          {"grad_norm_log", b.grad_norm_log},
          {"seed_curve_rms", b.seed_curve_rms}};
}

json preset_json(const PresetRow& p) {
  return {{"name", p.name},
          {"path", p.path},
          {"config_key", p.config_key},
          {"speedup", p.speedup},
          {"spread", p.speedup_spread},
          {"projected_peak_bytes", p.projected_peak_bytes},
          {"created_at", p.created_at}};
}

// One of the `finals` strategy's pairs at the target micro-batch.
json target_final_json(const TargetFinalRow& f) {
  json j = {{"budget", f.budget_name},
            {"config_key", f.config_key},
            {"evaluation_id", f.evaluation_id},
            {"micro_batch", f.micro_batch},
            {"steps", f.steps},
            {"rounds", f.rounds},
            {"disposition", std::string(to_string(f.disposition))},
            {"samples_per_s", f.samples_per_s},
            {"baseline_samples_per_s", f.baseline_samples_per_s},
            {"reason", f.reason},
            {"trial_ids", f.trial_ids}};
  j.update(speed_json(f.speedup, f.speedup_spread, f.speedup_lo, f.speedup_hi));
  return j;
}

}  // namespace

json campaign_summary(Store& store, std::optional<std::int64_t> campaign_id) {
  auto camp = campaign_id ? store.campaign(*campaign_id) : store.latest_campaign(false);
  if (!camp) {
    throw UsageError(campaign_id ? fmt::format("no campaign {} in the database", *campaign_id)
                                 : std::string("the database has no campaign"));
  }
  json s;
  s["campaign"] = campaign_json(*camp);
  s["trials"] = trial_counts(store, camp->id);
  add_evaluations(store, *camp, s);
  s["host_noise"] = json_array(store.host_noise(camp->id), host_noise_json);
  s["rounding_bands"] = json_array(store.rounding_bands(camp->id), rounding_band_json);
  s["finals"] = campaign_finals(store, camp->id);
  s["presets"] = json_array(store.presets(camp->id), preset_json);
  return s;
}

json campaign_finals(Store& store, std::int64_t campaign_id) {
  return json_array(store.target_finals(campaign_id), target_final_json);
}

std::string wrap_config_key(const std::string& key, std::size_t indent, std::size_t width) {
  if (key.empty()) return std::string(indent, ' ') + "(baseline: all defaults)\n";
  std::string out, line;
  std::size_t start = 0;
  while (start < key.size()) {
    std::size_t comma = key.find(',', start);
    std::string item =
        key.substr(start, comma == std::string::npos ? std::string::npos : comma - start + 1);
    start = comma == std::string::npos ? key.size() : comma + 1;
    if (!line.empty() && indent + line.size() + item.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += item;  // an item longer than the width stays whole: keys are never cut
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

namespace {

constexpr std::size_t kWidth = 100;

// A JSON row's speedup with its interval; "not paired" without a speedup.
std::string speed_of(const json& row) {
  const auto num = [&](const char* k) {
    return row.contains(k) && row[k].is_number() ? row[k].get<double>() : std::nan("");
  };
  return speed_text(num("speedup"), num("speedup_lo"), num("speedup_hi"),
                    row.contains("pairs") ? row["pairs"].get<int>() : row.value("rounds", 0),
                    num("spread"));
}

// A JSON row's projected peak memory; "not probed" without one.
std::string peak_of(const json& row) {
  const json& peak = row["projected_peak_bytes"];
  return peak.is_null() ? std::string("not probed") : format_gib(peak.get<double>());
}

// "  <what>: <total>  <kind>=<count>..." over the counts by kind.
std::string count_line(const std::string& what, std::size_t total, const json& by_kind) {
  std::string out = fmt::format("  {}: {}", what, total);
  for (const auto& [k, v] : by_kind.items()) out += fmt::format("  {}={}", k, v.get<int>());
  return out + "\n";
}

// The campaign line, its note, the trainer runs and the baseline.
std::string format_header(const json& s) {
  const auto& c = s["campaign"];
  std::string out =
      fmt::format("campaign {} — {} {} — {} (started {})\n", c["id"].get<std::int64_t>(),
                  c["workload"].get<std::string>(), c["size"].get<std::string>(),
                  c["state"].get<std::string>(), c["created_at"].get<std::string>());
  if (!c["note"].get<std::string>().empty()) out += "  " + c["note"].get<std::string>() + "\n";
  // Two counts, two names: a trainer run is one process; an evaluation judges one
  // configuration from several runs (gate runs, speed pairs, a memory probe).
  out += count_line("trainer runs", s["trials"]["total"].get<int>(), s["trials"]["by_disposition"]);
  if (s.contains("baseline")) {
    const auto& b = s["baseline"];
    out += fmt::format("  baseline: {:.3f} samples/s, projected peak {}\n",
                       b["samples_per_s"].get<double>(), peak_of(b));
  }
  return out;
}

std::string format_evaluations(const json& s) {
  std::string out =
      count_line("evaluations", s["evaluations"].size(), s["evaluations_by_disposition"]);
  for (const auto& e : s["evaluations"]) {
    out += fmt::format("    {:<14} @{:<3} {:<18} {:>10}{}\n", e["disposition"].get<std::string>(),
                       e["steps"].get<int>(), speed_of(e), peak_of(e),
                       e["on_frontier"].get<bool>() ? "  *frontier" : "");
    out += wrap_config_key(e["config_key"].get<std::string>(), 6, kWidth);
  }
  return out;
}

// The host's noise floor and the rounding bands the gate judged against.
std::string format_noise(const json& s) {
  std::string out;
  for (const auto& n : s["host_noise"]) {
    out += fmt::format(
        "  host noise at {} steps: A/A {:.2f} % a pair over {} pairs; smallest detectable speedup "
        "{:.3f}x at {} pairs{}\n",
        n["steps"].get<int>(), 100 * n["sd_log_ratio"].get<double>(), n["pairs"].get<int>(),
        n["detectable_speedup"].get<double>(), n["max_repeats"].get<int>(),
        n["resolution"].get<double>() > n["min_effect"].get<double>()
            ? fmt::format(" (the {:.1f} % minimum effect is below it)",
                          100 * n["min_effect"].get<double>())
            : "");
  }
  for (const auto& b : s["rounding_bands"]) {
    out += fmt::format(
        "  rounding band at {} steps (--perturb {:.3g}): loss-curve RMS {:.3g} (seed band "
        "{:.3g})\n",
        b["steps"].get<int>(), b["perturb_eps"].get<double>(), b["curve_rms"].get<double>(),
        b["seed_curve_rms"].get<double>());
  }
  return out;
}

// The best configuration, the finals and the emitted presets.
std::string format_results(const json& s) {
  std::string out;
  if (!s["best"].is_null()) {
    out += fmt::format("  best: {}\n", speed_of(s["best"]));
    out += wrap_config_key(s["best"]["config_key"].get<std::string>(), 4, kWidth);
  }
  if (!s["finals"].empty()) out += "  finals (paired at the target micro-batch):\n";
  for (const auto& f : s["finals"]) {
    out += fmt::format("    {:<10} {:<14} @mb{:<3} ", f["budget"].get<std::string>(),
                       f["disposition"].get<std::string>(), f["micro_batch"].get<int>());
    out += f["disposition"] == "accepted"
               ? fmt::format("{} ({} rounds)\n", speed_of(f), f["rounds"].get<int>())
               : f["reason"].get<std::string>() + "\n";
    out += wrap_config_key(f["config_key"].get<std::string>(), 6, kWidth);
  }
  for (const auto& p : s["presets"]) {
    out += fmt::format("  preset {}: {} {}\n", p["name"].get<std::string>(),
                       p["path"].get<std::string>(), speed_of(p));
    out += wrap_config_key(p["config_key"].get<std::string>(), 4, kWidth);
  }
  return out;
}

}  // namespace

std::string format_summary(const json& s) {
  return format_header(s) + format_evaluations(s) + format_noise(s) + format_results(s);
}

}  // namespace sg::agent
