// The dashboard's presets: per campaign, across campaigns, and each one's headline
// figure (dashboard_queries.hpp).
#include "agent/store/connection.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/queries/query_sql.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

// The headline figures below read the newest matching row: null when there is none, or
// when its speedup is not a number.

// The paired figure at the target micro-batch (finals) of a preset.
json finals_headline(SQLite::Database& db, const json& preset) {
  if (!db.tableExists("target_finals")) return nullptr;
  return query_one(
             db,
             "SELECT " + finite("speedup") + ", " + finite("speedup_spread") +
                 ", micro_batch, rounds FROM target_finals WHERE campaign_id = ? AND "
                 "evaluation_id = ? AND budget_name = ? AND disposition = 'accepted' "
                 "ORDER BY id DESC LIMIT 1",
             [](SQLite::Statement& q) -> json {
               if (q.getColumn(0).isNull()) return nullptr;
               return {{"source", "finals"},
                       {"speedup", value(q.getColumn(0))},
                       {"spread", value(q.getColumn(1))},
                       {"lo", nullptr},
                       {"hi", nullptr},
                       {"micro_batch", value(q.getColumn(2))},
                       {"rounds", value(q.getColumn(3))},
                       {"pairs", value(q.getColumn(3))}};
             },
             preset["campaign_id"].get<std::int64_t>(), preset["evaluation_id"].get<std::int64_t>(),
             preset["name"].get<std::string>())
      .value_or(nullptr);
}

// The evaluation's paired interval behind a preset.
json evaluation_headline(SQLite::Database& db, const json& preset) {
  return query_one(
             db,
             "SELECT " + finite("v.speedup") + ", " + finite("v.speedup_spread") + ", " +
                 interval_columns(db) + " FROM evaluations v WHERE v.id = ?",
             [](SQLite::Statement& q) -> json {
               if (q.getColumn(0).isNull()) return nullptr;
               return {{"source", "evaluation"},          {"speedup", value(q.getColumn(0))},
                       {"spread", value(q.getColumn(1))}, {"lo", value(q.getColumn(2))},
                       {"hi", value(q.getColumn(3))},     {"pairs", value(q.getColumn(4))}};
             },
             preset["evaluation_id"].get<std::int64_t>())
      .value_or(nullptr);
}

// The columns both preset listings show, with their evaluation's samples_per_s.
constexpr const char* kPresetListing =
    "SELECT p.id, p.campaign_id, p.name, p.budget_bytes, p.path, p.config_key, p.evaluation_id, "
    "p.speedup, p.speedup_spread, p.projected_peak_bytes, p.fingerprint_hash, p.created_at, "
    "v.samples_per_s";
constexpr const char* kPresetsJoined =
    " FROM presets p LEFT JOIN evaluations v ON v.id = p.evaluation_id";

}  // namespace

json campaign_presets(Store& store, std::int64_t campaign_id) {
  json out = rows(store_detail::connection(store),
                  std::string(kPresetListing) + kPresetsJoined +
                      " WHERE p.campaign_id = ?1 AND p.id IN (SELECT MAX(id) FROM presets WHERE "
                      "campaign_id = ?1 GROUP BY name) ORDER BY p.name",
                  campaign_id);
  for (auto& p : out) p["headline"] = preset_headline(store, p);
  return out;
}

json presets(Store& store) {
  json out =
      rows(store_detail::connection(store),
           std::string(kPresetListing) + ", p.trial_ids_json" + kPresetsJoined + " ORDER BY p.id");
  for (auto& p : out) {
    p["trial_ids"] = parse_or(p["trial_ids_json"], json::array());
    p.erase("trial_ids_json");
    p["headline"] = preset_headline(store, p);
  }
  return out;
}

json preset_series(Store& store) {
  SQLite::Database& db = store_detail::connection(store);
  // demoted: that campaign (a night of speedgate nightly) demoted the preset. The
  // verifications table arrived with schema version 2; a version-1 file has none.
  const bool has_verifications = db.tableExists("preset_verifications");
  json out = json::object();
  SQLite::Statement q(
      db,
      std::string("SELECT p.name, p.campaign_id, c.created_at, p.speedup, p.speedup_spread, "
                  "p.evaluation_id, ") +
          (has_verifications
               ? "EXISTS (SELECT 1 FROM preset_verifications v WHERE v.campaign_id = p.campaign_id "
                 "AND v.name = p.name AND v.verdict = 'demoted')"
               : "0") +
          " FROM presets p "
          "JOIN campaigns c ON c.id = p.campaign_id WHERE p.id IN (SELECT MAX(id) FROM presets "
          "GROUP BY name, campaign_id) ORDER BY p.campaign_id, p.name");
  while (q.executeStep()) {
    const std::string name = q.getColumn(0).getString();
    // The preset's headline figure (preset_headline), as everywhere else.
    json preset = {{"name", name},
                   {"campaign_id", value(q.getColumn(1))},
                   {"speedup", value(q.getColumn(3))},
                   {"speedup_spread", value(q.getColumn(4))},
                   {"evaluation_id", value(q.getColumn(5))}};
    const json headline = preset_headline(store, preset);
    out[name].push_back({{"campaign_id", value(q.getColumn(1))},
                         {"created_at", value(q.getColumn(2))},
                         {"speedup", headline["speedup"]},
                         {"spread", headline["spread"]},
                         {"source", headline["source"]},
                         {"demoted", q.getColumn(6).getInt() != 0}});
  }
  return out;
}

json preset_headline(Store& store, const json& preset) {
  SQLite::Database& db = store_detail::connection(store);
  // The paired figure at the target micro-batch (finals) when there is one; else the
  // evaluation's paired interval; else the preset's recorded speedup ± spread.
  if (preset.value("evaluation_id", json()).is_number()) {
    json headline = finals_headline(db, preset);
    if (headline.is_null()) headline = evaluation_headline(db, preset);
    if (!headline.is_null()) return headline;
  }
  return {{"source", "preset"},
          {"speedup", preset.value("speedup", json())},
          {"spread", preset.value("speedup_spread", json())},
          {"lo", nullptr},
          {"hi", nullptr}};
}

}  // namespace sg::agent::dashboard
