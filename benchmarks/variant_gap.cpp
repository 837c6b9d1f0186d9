// Campaign-chosen kernel variants vs an exhaustive sweep (see variant_gap.hpp).
#include "benchmarks/variant_gap.hpp"

#include "agent/protocol/kernel_params.hpp"
#include "agent/store/queries/report_queries.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

namespace sg::bench {
namespace {

using nlohmann::json;
using Config = std::map<std::string, std::string>;

struct Choice {
  Config config;
  std::string from;
};

// SG_NAME=value lines of a preset's content -> {NAME: value} (value after the first '=').
Config preset_config(const std::string& content) {
  Config c;
  std::istringstream in(content);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SG_", 0) != 0) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    c[line.substr(3, eq - 3)] = line.substr(eq + 1);
  }
  return c;
}

// The campaign's presets (in id order, "fast" first), then its accepted evaluations
// (fastest first): where a family's chosen parameters come from.
std::vector<Choice> choices(agent::Store& store, std::int64_t campaign_id) {
  std::vector<Choice> out, later;
  for (const auto& p : store.presets(campaign_id)) {
    Choice c{preset_config(p.content), "preset " + p.name};
    (p.name == "fast" ? out : later).push_back(std::move(c));
  }
  out.insert(out.end(), later.begin(), later.end());
  for (const auto& e : agent::accepted_evaluations_by_speedup(store, campaign_id)) {
    Config cfg;
    if (e.config.is_object()) {
      for (const auto& [k, v] : e.config.items()) {
        if (v.is_string()) cfg[k] = v.get<std::string>();
      }
    }
    out.push_back({cfg, fmt::format("evaluation {} ({}, {:.3f}x)", e.id, e.strategy, e.speedup)});
  }
  return out;
}

std::string params_of_row(const json& params) {
  if (!params.is_object()) throw std::invalid_argument("sweep: a row's params is not an object");
  std::string s;
  for (const auto& [k, v] : params.items()) {  // nlohmann's object keys are sorted
    if (!v.is_number_integer())
      throw std::invalid_argument("sweep: parameter '" + k + "' is not an integer");
    s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v.get<long long>());
  }
  return s;
}

// Sums fwd+bwd microseconds per parameter string over the family's ops; keeps only the
// parameter strings every op measured. Plain's total goes to *plain.
std::map<std::string, double> sweep_totals(const json& sweep, const std::string& family,
                                           std::vector<std::string>* ops, double* plain) {
  std::map<std::string, double> total;
  std::map<std::string, int> seen;
  int n_ops = 0;
  for (const auto& op : sweep.at("ops")) {
    if (op.value("family", "") != family) continue;
    ++n_ops;
    ops->push_back(op.value("op", "?"));
    for (const auto& row : op.at("rows")) {
      const double us = row.at("fwdbwd_us").get<double>();
      if (row.value("variant", "") == "plain_aten") {
        *plain += us;
        continue;
      }
      const std::string p = params_of_row(row.at("params"));
      total[p] += us;
      seen[p] += 1;
    }
  }
  for (auto it = total.begin(); it != total.end();)
    it = seen[it->first] == n_ops ? std::next(it) : total.erase(it);
  return total;
}

FamilyGap compare_family(const json& fam, const std::vector<Choice>& chosen_list,
                         const json& sweep) {
  FamilyGap g;
  g.family = fam.value("name", "?");
  g.switch_name = fam.value("switch", "");
  if (!fam.value("available", false)) {
    g.status = "unavailable";
    g.detail = "unavailable in the campaign's manifest: " +
               fam.value("unavailable_reason", std::string("(no reason)"));
    return g;
  }
  const std::string config_name = fam.value("env", "").substr(3);  // KERNEL_<FAMILY>
  for (const auto& c : chosen_list) {
    auto on = c.config.find(g.switch_name);
    if (on == c.config.end() || on->second != "1") continue;
    auto params = c.config.find(config_name);
    if (params != c.config.end()) {
      g.chosen = agent::canonical_kernel_value(params->second);
    } else if (fam.contains("defaults") && fam["defaults"].is_string()) {
      g.chosen = agent::canonical_kernel_value(fam["defaults"].get<std::string>());
    } else {
      g.status = "not_chosen";
      g.detail = c.from + " turns " + g.switch_name +
                 " on with the family's defaults, which this manifest does not list";
      return g;
    }
    g.chosen_from = c.from + (params == c.config.end() ? " (defaults)" : "");
    break;
  }
  if (g.chosen_from.empty()) {
    g.status = "not_chosen";
    g.detail = "no preset or accepted evaluation of the campaign turns " + g.switch_name + " on";
    return g;
  }
  const auto totals = sweep_totals(sweep, g.family, &g.ops, &g.plain_us);
  if (totals.empty()) {
    g.status = "not_swept";
    g.detail = "the sweep has no fused rows of family " + g.family;
    return g;
  }
  const auto best =
      std::min_element(totals.begin(), totals.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  g.best = best->first;
  g.best_us = best->second;
  const auto mine = totals.find(g.chosen);
  if (mine == totals.end()) {
    g.status = "params_not_swept";
    g.detail = "the sweep did not measure " + g.chosen;
    return g;
  }
  g.status = "compared";
  g.chosen_us = mine->second;
  g.gap_percent = 100.0 * (g.chosen_us - g.best_us) / g.best_us;
  return g;
}

}  // namespace

GapReport variant_gap(agent::Store& store, std::optional<std::int64_t> campaign_id,
                      const json& sweep) {
  if (!sweep.is_object() || !sweep.contains("ops") || !sweep["ops"].is_array()) {
    throw std::invalid_argument(
        "sweep: expected the JSON of speedgate-kernels-bench --json (an object with 'ops')");
  }
  const auto campaign = campaign_id ? store.campaign(*campaign_id) : store.latest_campaign(false);
  if (!campaign) {
    throw std::invalid_argument(campaign_id
                                    ? fmt::format("no campaign {} in the store", *campaign_id)
                                    : std::string("the store has no campaign"));
  }
  GapReport r;
  r.campaign_id = campaign->id;
  // The micro-batch of the campaign's kernel shapes: its kernel trials', else its target's
  // (0 = unknown); the sweep's from its shape. Unknown on either side is not a mismatch.
  int campaign_mb = 0;
  if (const auto timings = store.kernel_timings(campaign->id); !timings.empty()) {
    campaign_mb = timings.front().micro_batch;
  } else {
    campaign_mb = campaign->options.value("target_micro_batch", 0);
  }
  const json shape = sweep.value("shape", json::object());
  const int sweep_mb = shape.value("micro_batch", 0);
  auto with_mb = [](std::string s, int mb) {
    return mb > 0 ? s + ", micro-batch " + std::to_string(mb) : s;
  };
  r.campaign_shape = with_mb(campaign->workload + "/" + campaign->size, campaign_mb);
  r.sweep_shape = with_mb(shape.value("workload", "?") + "/" + shape.value("size", "?"), sweep_mb);
  r.shapes_match = campaign->workload == shape.value("workload", "?") &&
                   campaign->size == shape.value("size", "?") &&
                   (campaign_mb == 0 || sweep_mb == 0 || campaign_mb == sweep_mb);
  r.gpu = sweep.value("gpu", "?");
  const auto chosen = choices(store, campaign->id);
  const json families = campaign->manifest.value("kernel_families", json::array());
  for (const auto& fam : families) r.families.push_back(compare_family(fam, chosen, sweep));
  return r;
}

std::string render_gap_text(const GapReport& r) {
  std::string out =
      fmt::format("campaign {} ({}) vs sweep on {} ({}){}\n", r.campaign_id, r.campaign_shape,
                  r.gpu, r.sweep_shape,
                  r.shapes_match ? "" : "  WARNING: shapes differ; the gap compares other shapes");
  out +=
      "| family | status | chosen | from | sweep best | chosen us | best us | gap "
      "|\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : r.families) {
    if (g.status == "compared") {
      out += fmt::format("| {} | compared | {} | {} | {} | {:.1f} | {:.1f} | {:+.1f} %{} |\n",
                         g.family, g.chosen, g.chosen_from, g.best, g.chosen_us, g.best_us,
                         g.gap_percent,
                         g.gap_percent > kVariantGapLimitPercent ? " (over the 5 % limit)" : "");
    } else {
      out += fmt::format("| {} | {} | {} | {} | {} | | | {} |\n", g.family, g.status,
                         g.chosen.empty() ? "-" : g.chosen,
                         g.chosen_from.empty() ? "-" : g.chosen_from, g.best.empty() ? "-" : g.best,
                         g.detail);
    }
  }
  return out;
}

json render_gap_json(const GapReport& r) {
  json fams = json::array();
  for (const auto& g : r.families) {
    json f = {{"family", g.family}, {"switch", g.switch_name},
              {"status", g.status}, {"detail", g.detail},
              {"chosen", g.chosen}, {"chosen_from", g.chosen_from},
              {"best", g.best},     {"ops", g.ops}};
    if (g.status == "compared") {
      f["chosen_fwdbwd_us"] = g.chosen_us;
      f["best_fwdbwd_us"] = g.best_us;
      f["plain_fwdbwd_us"] = g.plain_us;
      f["gap_percent"] = g.gap_percent;
      f["within_limit"] = g.gap_percent <= kVariantGapLimitPercent;
    }
    fams.push_back(f);
  }
  return {{"campaign_id", r.campaign_id},
          {"campaign_shape", r.campaign_shape},
          {"sweep_shape", r.sweep_shape},
          {"shapes_match", r.shapes_match},
          {"gpu", r.gpu},
          {"limit_percent", kVariantGapLimitPercent},
          {"within_limit", gaps_within_limit(r)},
          {"families", fams}};
}

bool gaps_within_limit(const GapReport& r) {
  for (const auto& g : r.families) {
    if (g.status == "compared" && g.gap_percent > kVariantGapLimitPercent) return false;
  }
  return true;
}

}  // namespace sg::bench
