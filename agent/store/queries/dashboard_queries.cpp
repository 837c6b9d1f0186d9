#include "agent/store/queries/dashboard_queries.hpp"

#include <cmath>
#include <map>
#include <vector>

#include "agent/store/connection.hpp"
#include "agent/store/queries/evidence.hpp"
#include "agent/store/queries/query_sql.hpp"
#include "agent/store/queries/series_sample.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

// A column as JSON: numbers stay numbers, the stored 'NaN'/'Inf' texts become null
// (JSON has no NaN), other text stays text.
json value(const SQLite::Column& c) {
  if (c.isNull()) return nullptr;
  if (c.isInteger()) return c.getInt64();
  if (c.isFloat()) {
    const double d = c.getDouble();
    return std::isfinite(d) ? json(d) : json(nullptr);
  }
  const std::string s = c.getString();
  if (s == "NaN" || s == "Inf" || s == "-Inf") return nullptr;
  return s;
}

json row(SQLite::Statement& q) {
  json out = json::object();
  for (int i = 0; i < q.getColumnCount(); ++i) out[q.getColumnName(i)] = value(q.getColumn(i));
  return out;
}

json rows(SQLite::Statement& q) {
  json out = json::array();
  while (q.executeStep()) out.push_back(row(q));
  return out;
}

json parse_or(const json& text, json fallback) {
  if (!text.is_string()) return fallback;
  auto parsed = json::parse(text.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

// One evaluation as a JSON object, built by SQLite.
std::string evaluation_object() {
  return "json_object('id', v.id, 'campaign_id', v.campaign_id, 'strategy', v.strategy, "
         "'config_key', v.config_key, 'steps', v.steps, 'disposition', v.disposition, "
         "'gate_class', v.gate_class, 'reason', v.reason, 'speedup', " +
         finite("v.speedup") + ", 'speedup_spread', " + finite("v.speedup_spread") +
         ", 'samples_per_s', " + finite("v.samples_per_s") + ", 'projected_peak_bytes', " +
         finite("v.projected_peak_bytes") +
         ", 'trial_ids', json(v.trial_ids_json), 'on_frontier', v.on_frontier, "
         "'created_at', v.created_at, 'measured_peak_bytes', "
         "(SELECT MAX(t.peak_allocated_bytes) FROM json_each(v.trial_ids_json) j "
         " JOIN trials t ON t.id = j.value))";
}

std::string json_array_of(SQLite::Database& db, const std::string& sql, std::int64_t campaign_id) {
  SQLite::Statement q(db, sql);
  q.bind(1, campaign_id);
  if (!q.executeStep() || q.getColumn(0).isNull()) return "[]";
  return q.getColumn(0).getString();
}

}  // namespace

std::string finite(const std::string& column) {
  return "CASE WHEN typeof(" + column + ") IN ('integer', 'real') THEN " + column + " END";
}

json campaigns(Store& store) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(
      db,
      "SELECT c.id, c.created_at, c.finished_at, c.state, c.workload, c.size, c.deterministic, "
      "c.note, e.fingerprint_hash, "
      "(SELECT COUNT(*) FROM evaluations v WHERE v.campaign_id = c.id) AS evaluations, "
      "(SELECT COUNT(*) FROM trials t WHERE t.campaign_id = c.id) AS trainer_runs, "
      "(SELECT MAX(" +
          finite("v.speedup") +
          ") FROM evaluations v WHERE v.campaign_id = c.id "
          " AND v.disposition = 'accepted') AS best_speedup "
          "FROM campaigns c LEFT JOIN environments e ON e.id = c.environment_id ORDER BY c.id "
          "DESC");
  json out = rows(q);
  for (auto& c : out) {
    if (c["deterministic"].is_number()) c["deterministic"] = c["deterministic"].get<int>() != 0;
  }
  return out;
}

bool campaign_exists(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(db, "SELECT 1 FROM campaigns WHERE id = ?");
  q.bind(1, campaign_id);
  return q.executeStep();
}

std::string campaign_trials(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  return json_array_of(db,
                       "SELECT json_group_array(" + evaluation_object() +
                           ") FROM (SELECT * FROM evaluations WHERE campaign_id = ? ORDER BY id) v",
                       campaign_id);
}

std::optional<std::string> sort_column(const std::string& name) {
  static const std::map<std::string, std::string> columns = {
      {"id", "id"},
      {"strategy", "strategy"},
      {"config_key", "config_key"},
      {"disposition", "disposition"},
      {"gate_class", "gate_class"},
      {"speedup", finite("speedup")},
      {"samples_per_s", finite("samples_per_s")},
      {"projected_peak_bytes", finite("projected_peak_bytes")},
      {"reason", "reason"}};
  if (name.empty()) return std::string("id");
  const auto it = columns.find(name);
  if (it == columns.end()) return std::nullopt;
  return it->second;
}

json campaign_trial_page(Store& store, std::int64_t campaign_id, const TrialPage& page) {
  SQLite::Database& db = store_detail::connection(store);
  // sort was checked by the caller (sort_column); NULLs last either way.
  const std::string column = sort_column(page.sort).value_or("id");
  const std::string order = " ORDER BY (" + column + ") IS NULL, " + column +
                            (page.descending ? " DESC" : " ASC") + ", id";
  const std::string where =
      " WHERE campaign_id = :c AND (:d = '' OR disposition = :d) AND (:t = '' OR "
      "instr(lower(config_key || ' ' || reason || ' ' || strategy), lower(:t)) > 0)";
  SQLite::Statement count(db, "SELECT COUNT(*) FROM evaluations" + where);
  SQLite::Statement q(db, "SELECT json_group_array(" + evaluation_object() +
                              ") FROM (SELECT * FROM evaluations" + where + order +
                              " LIMIT :l OFFSET :o) v");
  for (auto* st : {&count, &q}) {
    st->bind(":c", campaign_id);
    st->bind(":d", page.disposition);
    st->bind(":t", page.text);
  }
  q.bind(":l", page.limit);
  q.bind(":o", page.offset);
  count.executeStep();
  q.executeStep();
  return {
      {"matched", count.getColumn(0).getInt64()},
      {"offset", page.offset},
      {"evaluations", json::parse(q.getColumn(0).isNull() ? "[]" : q.getColumn(0).getString())}};
}

json campaign_series(Store& store, std::int64_t campaign_id, std::size_t max_points) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(
      db, "SELECT v.id, v.disposition, " + finite("v.speedup") + ", " + finite("v.samples_per_s") +
              ", " + finite("v.projected_peak_bytes") +
              ", (SELECT MAX(t.peak_allocated_bytes) FROM "
              "json_each(v.trial_ids_json) j JOIN trials t ON t.id = j.value), v.on_frontier, "
              "v.id IN (SELECT evaluation_id FROM presets WHERE campaign_id = :c) "
              "FROM evaluations v WHERE v.campaign_id = :c ORDER BY v.id");
  q.bind(":c", campaign_id);
  struct Row {
    json id, speedup, samples, projected, measured, on_frontier;
  };
  std::vector<Row> rows;
  std::vector<SeriesPoint> points;
  json dispositions = json::object();
  std::int64_t speedup = 0, throughput = 0, frontier = 0, memory = 0;
  // Best accepted speedup so far, over every evaluation (not the sample): one point where
  // it rises, and one at the last evaluation so the line reaches the end.
  json best = {{"index", json::array()}, {"speedup", json::array()}};
  double best_value = -1;
  while (q.executeStep()) {
    Row r{value(q.getColumn(0)), value(q.getColumn(2)), value(q.getColumn(3)),
          value(q.getColumn(4)), value(q.getColumn(5)), value(q.getColumn(6))};
    SeriesPoint p;
    p.disposition = q.getColumn(1).getString();
    p.on_frontier = q.getColumn(6).getInt() != 0;
    p.preset = q.getColumn(7).getInt() != 0;
    p.projected_peak_bytes = r.projected.is_number() ? r.projected.get<double>() : NAN;
    speedup += !r.speedup.is_null();
    throughput += !r.samples.is_null();
    frontier += !r.samples.is_null() && !r.projected.is_null();
    memory += !r.measured.is_null() && !r.projected.is_null();
    dispositions[p.disposition] = dispositions.value(p.disposition, 0) + 1;
    if (p.disposition == "accepted" && r.speedup.is_number() &&
        r.speedup.get<double>() > best_value) {
      best_value = r.speedup.get<double>();
      best["index"].push_back(rows.size() + 1);
      best["speedup"].push_back(best_value);
    }
    rows.push_back(std::move(r));
    points.push_back(std::move(p));
  }
  json series = {{"index", json::array()},
                 {"id", json::array()},
                 {"disposition", json::array()},
                 {"speedup", json::array()},
                 {"samples_per_s", json::array()},
                 {"projected_peak_bytes", json::array()},
                 {"measured_peak_bytes", json::array()},
                 {"on_frontier", json::array()},
                 {"preset", json::array()}};
  for (std::size_t i : sample_series(points, max_points)) {
    const Row& r = rows[i];
    series["index"].push_back(i + 1);
    series["id"].push_back(r.id);
    series["disposition"].push_back(points[i].disposition);
    series["speedup"].push_back(r.speedup);
    series["samples_per_s"].push_back(r.samples);
    series["projected_peak_bytes"].push_back(r.projected);
    series["measured_peak_bytes"].push_back(r.measured);
    series["on_frontier"].push_back(r.on_frontier);
    series["preset"].push_back(points[i].preset ? 1 : 0);
  }
  if (best_value > 0 && best["index"].back().get<std::size_t>() != rows.size()) {
    best["index"].push_back(rows.size());
    best["speedup"].push_back(best_value);
  }
  return {{"evaluations", rows.size()},
          {"max_points", max_points},
          {"dispositions", dispositions},
          {"best_so_far", best},
          {"totals",
           {{"speedup", speedup},
            {"throughput", throughput},
            {"frontier", frontier},
            {"memory", memory}}},
          {"series", series}};
}

std::optional<std::int64_t> newest_campaign(Store& store) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(db, "SELECT MAX(id) FROM campaigns");
  if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
  return q.getColumn(0).getInt64();
}

std::string campaign_frontier(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  return json_array_of(db,
                       "SELECT json_group_array(" + evaluation_object() +
                           ") FROM (SELECT * FROM evaluations WHERE campaign_id = ? AND "
                           "on_frontier = 1 ORDER BY projected_peak_bytes) v",
                       campaign_id);
}

std::string campaign_projections(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  return json_array_of(
      db,
      "SELECT json_group_array(json_object('id', id, 'config_key', config_key, "
      "'target_micro_batch', target_micro_batch, 'world_size', world_size, 'zero_stage', "
      "zero_stage, 'projected_bytes', " +
          finite("projected_bytes") + ", 'measured_bytes', " + finite("measured_bytes") +
          ", 'relative_error', " + finite("relative_error") +
          ")) FROM (SELECT * FROM projections WHERE campaign_id = ? ORDER BY id)",
      campaign_id);
}

json campaign_presets(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(
      db,
      "SELECT p.id, p.campaign_id, p.name, p.budget_bytes, p.path, p.config_key, p.evaluation_id, "
      "p.speedup, p.speedup_spread, p.projected_peak_bytes, p.fingerprint_hash, p.created_at, "
      "v.samples_per_s FROM presets p LEFT JOIN evaluations v ON v.id = p.evaluation_id "
      "WHERE p.campaign_id = ? AND p.id IN (SELECT MAX(id) FROM presets WHERE campaign_id = ? "
      "GROUP BY name) ORDER BY p.name");
  q.bind(1, campaign_id);
  q.bind(2, campaign_id);
  json out = rows(q);
  for (auto& p : out) p["headline"] = preset_headline(store, p);
  return out;
}

json campaign_gate(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  json out = {{"host_noise", json::array()}, {"rounding_bands", json::array()}};
  if (db.tableExists("host_noise")) {  // schema 6
    SQLite::Statement q(db,
                        "SELECT steps, micro_batch, pairs, sd_log_ratio, detectable_speedup, "
                        "resolution, min_effect, max_repeats "
                        "FROM host_noise WHERE campaign_id = ? ORDER BY steps");
    q.bind(1, campaign_id);
    out["host_noise"] = rows(q);
  }
  if (db.tableExists("rounding_bands")) {
    SQLite::Statement q(
        db,
        "SELECT steps, perturb_eps, seeds, curve_rms, eval_loss_abs, grad_norm_log, seed_curve_rms "
        "FROM rounding_bands WHERE campaign_id = ? ORDER BY steps");
    q.bind(1, campaign_id);
    out["rounding_bands"] = rows(q);
  }
  return out;
}

json campaign_budgets(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  json out = json::array();
  SQLite::Statement q(db, "SELECT options_json FROM campaigns WHERE id = ?");
  q.bind(1, campaign_id);
  if (q.executeStep()) {
    const json options = parse_or(value(q.getColumn(0)), json::object());
    const json budgets = options.is_object() ? options.value("memory_budgets", json()) : json();
    if (budgets.is_object()) {
      for (const auto& [name, bytes] : budgets.items()) {
        if (bytes.is_number()) out.push_back({{"name", name}, {"bytes", bytes}});
      }
    } else if (budgets.is_array()) {
      for (const auto& b : budgets) {
        if (b.is_object() && b.contains("name") && b.contains("bytes")) {
          out.push_back({{"name", b["name"]}, {"bytes", b["bytes"]}});
        }
      }
    }
  }
  if (!out.empty()) return out;
  SQLite::Statement p(
      db, "SELECT name, MAX(budget_bytes) FROM presets WHERE campaign_id = ? GROUP BY name");
  p.bind(1, campaign_id);
  while (p.executeStep())
    out.push_back({{"name", p.getColumn(0).getString()}, {"bytes", value(p.getColumn(1))}});
  return out;
}

json presets(Store& store) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(
      db,
      "SELECT p.id, p.campaign_id, p.name, p.budget_bytes, p.path, p.config_key, p.evaluation_id, "
      "p.trial_ids_json, p.speedup, p.speedup_spread, p.projected_peak_bytes, p.fingerprint_hash, "
      "p.created_at, v.samples_per_s FROM presets p LEFT JOIN evaluations v ON v.id = "
      "p.evaluation_id "
      "ORDER BY p.id");
  json out = rows(q);
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
  json out = json::object();
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

std::optional<json> run(Store& store, std::int64_t trial_id) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(
      db,
      "SELECT id, campaign_id, trial_key, purpose, config_key, config_json, seed, steps, "
      "micro_batch, grad_accum, repeat, state, disposition, run_ok, reason, started_at, "
      "finished_at, wall_s, exit_code, signal, samples_per_s, tokens_per_s, "
      "peak_allocated_bytes, peak_reserved_bytes, breakdown_json, param_digest, "
      "optimizer_digest, eval_loss, eval_loss_bits FROM trials WHERE id = ?");
  q.bind(1, trial_id);
  if (!q.executeStep()) return std::nullopt;
  json r = row(q);
  r["config"] = parse_or(r["config_json"], json::object());
  r["breakdown"] = parse_or(r["breakdown_json"], json::object());
  r.erase("config_json");
  r.erase("breakdown_json");
  SQLite::Statement s(db,
                      "SELECT step, loss, loss_bits, grad_norm, grad_norm_bits, seconds FROM steps "
                      "WHERE trial_id = ? ORDER BY step");
  s.bind(1, trial_id);
  r["steps"] = rows(s);
  return r;
}

std::optional<RunLog> run_log(Store& store, std::int64_t trial_id, const std::string& stream) {
  SQLite::Database& db = store_detail::connection(store);
  if (stream != "stdout" && stream != "stderr") return std::nullopt;
  const bool reused = has_column(db, "trials", "reused_from");
  SQLite::Statement q(db, "SELECT " + stream + "_log, campaign_id, " +
                              (reused ? "reused_from" : "NULL") + " FROM trials WHERE id = ?");
  q.bind(1, trial_id);
  if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
  RunLog out{q.getColumn(0).getString(), {{q.getColumn(1).getInt64(), trial_id}}};
  // A warm-started run keeps the log of the run it copies (another campaign's directory).
  std::optional<std::int64_t> from;
  if (!q.getColumn(2).isNull()) from = q.getColumn(2).getInt64();
  for (int hops = 0; from && hops < 8; ++hops) {
    SQLite::Statement f(db, std::string("SELECT campaign_id, ") +
                                (reused ? "reused_from" : "NULL") + " FROM trials WHERE id = ?");
    f.bind(1, *from);
    if (!f.executeStep()) break;
    out.owners.emplace_back(f.getColumn(0).getInt64(), *from);
    from = f.getColumn(1).isNull() ? std::nullopt
                                   : std::optional<std::int64_t>(f.getColumn(1).getInt64());
  }
  return out;
}

json preset_headline(Store& store, const json& preset) {
  SQLite::Database& db = store_detail::connection(store);
  // The paired figure at the target micro-batch (finals) when there is one; else the
  // evaluation's paired interval; else the preset's recorded speedup ± spread.
  if (db.tableExists("target_finals") && preset.value("evaluation_id", json()).is_number()) {
    SQLite::Statement f(db,
                        "SELECT " + finite("speedup") + ", " + finite("speedup_spread") +
                            ", micro_batch, rounds FROM target_finals WHERE campaign_id = ? AND "
                            "evaluation_id = ? AND budget_name = ? AND disposition = 'accepted' "
                            "ORDER BY id DESC LIMIT 1");
    f.bind(1, preset["campaign_id"].get<std::int64_t>());
    f.bind(2, preset["evaluation_id"].get<std::int64_t>());
    f.bind(3, preset["name"].get<std::string>());
    if (f.executeStep() && !f.getColumn(0).isNull()) {
      return {{"source", "finals"},
              {"speedup", value(f.getColumn(0))},
              {"spread", value(f.getColumn(1))},
              {"lo", nullptr},
              {"hi", nullptr},
              {"micro_batch", value(f.getColumn(2))},
              {"rounds", value(f.getColumn(3))},
              {"pairs", value(f.getColumn(3))}};
    }
  }
  if (preset.value("evaluation_id", json()).is_number()) {
    SQLite::Statement v(db, "SELECT " + finite("v.speedup") + ", " + finite("v.speedup_spread") +
                                ", " + interval_columns(db) + " FROM evaluations v WHERE v.id = ?");
    v.bind(1, preset["evaluation_id"].get<std::int64_t>());
    if (v.executeStep() && !v.getColumn(0).isNull()) {
      return {{"source", "evaluation"},          {"speedup", value(v.getColumn(0))},
              {"spread", value(v.getColumn(1))}, {"lo", value(v.getColumn(2))},
              {"hi", value(v.getColumn(3))},     {"pairs", value(v.getColumn(4))}};
    }
  }
  return {{"source", "preset"},
          {"speedup", preset.value("speedup", json())},
          {"spread", preset.value("speedup_spread", json())},
          {"lo", nullptr},
          {"hi", nullptr}};
}

}  // namespace sg::agent::dashboard
