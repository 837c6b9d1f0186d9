#include "agent/store/queries/metrics_queries.hpp"

#include <cmath>

#include "agent/store/connection.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/queries/query_sql.hpp"

namespace sg::agent::dashboard {
namespace {

double number(const SQLite::Column& c) {
  if (c.isInteger() || c.isFloat()) return c.getDouble();
  return std::nan("");
}

// (name, count) rows.
template <class... Args>
Counts counts(SQLite::Database& db, const std::string& sql, const Args&... args) {
  return query_all(
      db, sql,
      [](SQLite::Statement& q) {
        return std::make_pair(q.getColumn(0).getString(), q.getColumn(1).getDouble());
      },
      args...);
}

std::vector<PresetGauges> newest_presets(Store& store) {
  return query_all(
      store_detail::connection(store),
      "SELECT p.name, p.speedup, v.samples_per_s, p.projected_peak_bytes, p.budget_bytes, "
      "(SELECT MAX(t.peak_allocated_bytes) FROM json_each(p.trial_ids_json) j "
      " JOIN trials t ON t.id = j.value), p.campaign_id, p.evaluation_id, p.speedup_spread "
      "FROM presets p LEFT JOIN evaluations v "
      "ON v.id = p.evaluation_id WHERE p.id IN (SELECT MAX(id) FROM presets GROUP BY name)",
      [&store](SQLite::Statement& q) {
        PresetGauges g;
        g.name = q.getColumn(0).getString();
        g.speedup = number(q.getColumn(1));
        g.samples_per_s = number(q.getColumn(2));
        g.projected_peak_bytes = number(q.getColumn(3));
        g.budget_bytes = number(q.getColumn(4));
        g.measured_peak_bytes = number(q.getColumn(5));
        nlohmann::json preset = {{"name", g.name},
                                 {"campaign_id", q.getColumn(6).getInt64()},
                                 {"speedup", g.speedup},
                                 {"speedup_spread", number(q.getColumn(8))}};
        if (!q.getColumn(7).isNull()) preset["evaluation_id"] = q.getColumn(7).getInt64();
        g.headline = preset_headline(store, preset);
        return g;
      });
}

std::optional<NewestCampaign> newest_campaign_state(SQLite::Database& db) {
  const auto id = newest_campaign_id(db);
  if (!id) return std::nullopt;
  NewestCampaign c;
  c.id = *id;
  c.trial_states =
      counts(db, "SELECT state, COUNT(*) FROM trials WHERE campaign_id = ? GROUP BY state", c.id);
  // finite(): not the text 'NaN' of an unpaired drop.
  c.best_accepted_speedup =
      query_one(
          db,
          "SELECT MAX(" + finite("speedup") +
              ") FROM evaluations WHERE campaign_id = ? AND disposition = 'accepted'",
          [](SQLite::Statement& q) { return number(q.getColumn(0)); }, c.id)
          .value_or(std::nan(""));
  return c;
}

std::string newest_fingerprint(SQLite::Database& db) {
  return query_one(db,
                   "SELECT e.fingerprint_hash FROM campaigns c JOIN environments e ON e.id = "
                   "c.environment_id ORDER BY c.id DESC LIMIT 1",
                   first_text)
      .value_or(std::string());
}

}  // namespace

MetricsSnapshot read_metrics(Store& store) {
  SQLite::Database& db = store_detail::connection(store);
  MetricsSnapshot m;
  m.evaluation_dispositions =
      counts(db, "SELECT disposition, COUNT(*) FROM evaluations GROUP BY disposition");
  m.trial_states = counts(db, "SELECT state, COUNT(*) FROM trials GROUP BY state");
  m.presets = newest_presets(store);
  m.campaign_states = counts(db, "SELECT state, COUNT(*) FROM campaigns GROUP BY state");
  m.newest = newest_campaign_state(db);
  m.newest_fingerprint = newest_fingerprint(db);
  return m;
}

}  // namespace sg::agent::dashboard
