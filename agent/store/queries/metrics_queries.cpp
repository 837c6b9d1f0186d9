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

Counts counts(SQLite::Statement& q) {
  Counts out;
  while (q.executeStep()) out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getDouble());
  return out;
}

Counts counts(SQLite::Database& db, const std::string& sql) {
  SQLite::Statement q(db, sql);
  return counts(q);
}

std::vector<PresetGauges> newest_presets(Store& store) {
  SQLite::Statement q(
      store_detail::connection(store),
      "SELECT p.name, p.speedup, v.samples_per_s, p.projected_peak_bytes, p.budget_bytes, "
      "(SELECT MAX(t.peak_allocated_bytes) FROM json_each(p.trial_ids_json) j "
      " JOIN trials t ON t.id = j.value), p.campaign_id, p.evaluation_id, p.speedup_spread "
      "FROM presets p LEFT JOIN evaluations v "
      "ON v.id = p.evaluation_id WHERE p.id IN (SELECT MAX(id) FROM presets GROUP BY name)");
  std::vector<PresetGauges> out;
  while (q.executeStep()) {
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
    out.push_back(std::move(g));
  }
  return out;
}

std::optional<NewestCampaign> newest_campaign_state(SQLite::Database& db) {
  SQLite::Statement latest(db, "SELECT id FROM campaigns ORDER BY id DESC LIMIT 1");
  if (!latest.executeStep()) return std::nullopt;
  NewestCampaign c;
  c.id = latest.getColumn(0).getInt64();
  SQLite::Statement q(db,
                      "SELECT state, COUNT(*) FROM trials WHERE campaign_id = ? GROUP BY state");
  q.bind(1, c.id);
  c.trial_states = counts(q);
  // finite(): not the text 'NaN' of an unpaired drop.
  SQLite::Statement b(db,
                      "SELECT MAX(" + finite("speedup") +
                          ") FROM evaluations WHERE campaign_id = ? AND disposition = 'accepted'");
  b.bind(1, c.id);
  c.best_accepted_speedup = b.executeStep() ? number(b.getColumn(0)) : std::nan("");
  return c;
}

std::string newest_fingerprint(SQLite::Database& db) {
  SQLite::Statement q(
      db,
      "SELECT e.fingerprint_hash FROM campaigns c JOIN environments e ON e.id = c.environment_id "
      "ORDER BY c.id DESC LIMIT 1");
  return q.executeStep() ? q.getColumn(0).getString() : std::string();
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
