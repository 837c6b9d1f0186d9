// Read-only queries behind the dashboard and its JSON API (/api/v1/...), kept with the
// store's SQL (agent/store/queries/). Each returns JSON built from the store's tables;
// NaN/Inf (stored as text) come out as null. Open the Store read-only to call them.
// Words: an "evaluation" is one candidate configuration judged by the gate (evaluations
// table); a "trainer run" is one run of the trainer (trials table) behind it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent::dashboard {

nlohmann::json campaigns(Store& store);
bool campaign_exists(Store& store, std::int64_t campaign_id);
// The long lists come back as JSON text built inside SQLite (json_group_array): with
// 10,000 trials that is an order of magnitude faster than building nlohmann objects.
std::string campaign_trials(Store& store, std::int64_t campaign_id);

// One page of a campaign's trials for the table, filtered by disposition (exact) and
// text (case-insensitive substring of config, reason or strategy); newest last.
// Sorted by `sort` (a name sort_column knows; "" = id), NULLs last.
struct TrialPage {
  std::string disposition, text, sort;
  bool descending = false;
  std::int64_t offset = 0, limit = 200;
};
// The SQL for a sortable table column; nullopt for a name the table cannot sort by.
std::optional<std::string> sort_column(const std::string& name);
nlohmann::json campaign_trial_page(Store& store, std::int64_t campaign_id, const TrialPage& page);
// What the charts draw: a campaign's trials as columns (index = 1-based position in the
// campaign, id, disposition, speedup, samples_per_s, projected and measured peak bytes,
// on_frontier, preset), at most max_points of them (0 = all; which ones:
// series_sample.hpp), with what they stand for: "trials" (all of the campaign),
// "dispositions" ({name: trials}) and "totals" (per chart, the trials with a value to
// draw: speedup, throughput, frontier = throughput × projected peak, memory = measured
// × projected peak).
nlohmann::json campaign_series(Store& store, std::int64_t campaign_id, std::size_t max_points);
// What /series sends when the request names no max_points: what one chart draws. 500,
// not 1,000: half the work for the page's main thread (Chart.js builds, lays out and
// draws every point; benchmarks/results/dashboard.md has what it changed) and the
// stratified sample still holds every disposition, the presets' trials and up to 250
// frontier trials (less the presets).
constexpr std::size_t kDefaultSeriesPoints = 500;
// The id of the newest campaign (highest id); nullopt when the store has none.
std::optional<std::int64_t> newest_campaign(Store& store);
std::string campaign_frontier(Store& store, std::int64_t campaign_id);
std::string campaign_projections(Store& store, std::int64_t campaign_id);
nlohmann::json campaign_presets(Store& store, std::int64_t campaign_id);
// Memory budgets of a campaign: from its options, else from its presets.
nlohmann::json campaign_budgets(Store& store, std::int64_t campaign_id);
// The host's A/A noise (smallest detectable speedup) and the rounding bands per step budget;
// empty lists before schema 6.
nlohmann::json campaign_gate(Store& store, std::int64_t campaign_id);
nlohmann::json presets(Store& store);
// Headline speedup (preset_headline) of each preset name across campaigns (nights), oldest
// first.
nlohmann::json preset_series(Store& store);
// One trainer run with its per-step series; nullopt when absent.
std::optional<nlohmann::json> run(Store& store, std::int64_t trial_id);
// A run's stored stdout or stderr log path and the (campaign, run) directories it may be
// in: its own, and those of the runs it was warm-started from. nullopt when absent.
struct RunLog {
  std::string path;
  std::vector<std::pair<std::int64_t, std::int64_t>> owners;
};
std::optional<RunLog> run_log(Store& store, std::int64_t trial_id, const std::string& stream);
// A preset's one headline number: {source: finals|evaluation|preset, speedup, spread, lo,
// hi, pairs[, micro_batch, rounds]}: the paired figure at the target where there is one.
nlohmann::json preset_headline(Store& store, const nlohmann::json& preset);
}  // namespace sg::agent::dashboard
