// The dashboard's campaign tables and runs (dashboard_queries.hpp); the charts' series
// are in campaign_series.cpp, the presets in preset_queries.cpp.
#include "agent/store/queries/dashboard_queries.hpp"

#include <map>

#include "agent/store/connection.hpp"
#include "agent/store/queries/query_sql.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

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

// The evaluations `from` selects (aliased v), as a JSON array built by SQLite.
std::string evaluations_array(const std::string& from) {
  return "SELECT json_group_array(" + evaluation_object() + ") FROM (" + from + ") v";
}

// Memory budgets named in a campaign's options_json ({name: bytes} or [{name, bytes}]).
json option_budgets(const json& options) {
  json out = json::array();
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
  return out;
}

}  // namespace

json campaigns(Store& store) {
  json out = rows(store_detail::connection(store),
                  "SELECT c.id, c.created_at, c.finished_at, c.state, c.workload, c.size, "
                  "c.deterministic, c.note, e.fingerprint_hash, "
                  "(SELECT COUNT(*) FROM evaluations v WHERE v.campaign_id = c.id) AS evaluations, "
                  "(SELECT COUNT(*) FROM trials t WHERE t.campaign_id = c.id) AS trainer_runs, "
                  "(SELECT MAX(" +
                      finite("v.speedup") +
                      ") FROM evaluations v WHERE v.campaign_id = c.id "
                      " AND v.disposition = 'accepted') AS best_speedup "
                      "FROM campaigns c LEFT JOIN environments e ON e.id = c.environment_id "
                      "ORDER BY c.id DESC");
  for (auto& c : out) {
    if (c["deterministic"].is_number()) c["deterministic"] = c["deterministic"].get<int>() != 0;
  }
  return out;
}

bool campaign_exists(Store& store, std::int64_t campaign_id) {
  return query_one(store_detail::connection(store), "SELECT 1 FROM campaigns WHERE id = ?",
                   first_int64, campaign_id)
      .has_value();
}

std::string campaign_trials(Store& store, std::int64_t campaign_id) {
  return json_array_of(
      store_detail::connection(store),
      evaluations_array("SELECT * FROM evaluations WHERE campaign_id = ? ORDER BY id"),
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
  // ?1 campaign, ?2 disposition, ?3 text, ?4 limit, ?5 offset.
  const std::string where =
      " WHERE campaign_id = ?1 AND (?2 = '' OR disposition = ?2) AND (?3 = '' OR "
      "instr(lower(config_key || ' ' || reason || ' ' || strategy), lower(?3)) > 0)";
  const auto matched = query_one(db, "SELECT COUNT(*) FROM evaluations" + where, first_int64,
                                 campaign_id, page.disposition, page.text);
  const std::string evaluations = json_array_of(
      db, evaluations_array("SELECT * FROM evaluations" + where + order + " LIMIT ?4 OFFSET ?5"),
      campaign_id, page.disposition, page.text, page.limit, page.offset);
  return {{"matched", matched.value_or(0)},
          {"offset", page.offset},
          {"evaluations", json::parse(evaluations)}};
}

std::optional<std::int64_t> newest_campaign(Store& store) {
  return newest_campaign_id(store_detail::connection(store));
}

std::string campaign_frontier(Store& store, std::int64_t campaign_id) {
  return json_array_of(store_detail::connection(store),
                       evaluations_array("SELECT * FROM evaluations WHERE campaign_id = ? AND "
                                         "on_frontier = 1 ORDER BY projected_peak_bytes"),
                       campaign_id);
}

std::string campaign_projections(Store& store, std::int64_t campaign_id) {
  return json_array_of(
      store_detail::connection(store),
      "SELECT json_group_array(json_object('id', id, 'config_key', config_key, "
      "'target_micro_batch', target_micro_batch, 'world_size', world_size, 'zero_stage', "
      "zero_stage, 'projected_bytes', " +
          finite("projected_bytes") + ", 'measured_bytes', " + finite("measured_bytes") +
          ", 'relative_error', " + finite("relative_error") +
          ")) FROM (SELECT * FROM projections WHERE campaign_id = ? ORDER BY id)",
      campaign_id);
}

json campaign_gate(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  json out = {{"host_noise", json::array()}, {"rounding_bands", json::array()}};
  if (db.tableExists("host_noise")) {  // schema 6
    out["host_noise"] = rows(db,
                             "SELECT steps, micro_batch, pairs, sd_log_ratio, detectable_speedup, "
                             "resolution, min_effect, max_repeats FROM host_noise WHERE "
                             "campaign_id = ? ORDER BY steps",
                             campaign_id);
  }
  if (db.tableExists("rounding_bands")) {
    out["rounding_bands"] = rows(db,
                                 "SELECT steps, perturb_eps, seeds, curve_rms, eval_loss_abs, "
                                 "grad_norm_log, seed_curve_rms FROM rounding_bands WHERE "
                                 "campaign_id = ? ORDER BY steps",
                                 campaign_id);
  }
  return out;
}

json campaign_budgets(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  const auto options = query_one(
      db, "SELECT options_json FROM campaigns WHERE id = ?",
      [](SQLite::Statement& q) { return parse_or(value(q.getColumn(0)), json::object()); },
      campaign_id);
  json out = options ? option_budgets(*options) : json::array();
  if (!out.empty()) return out;
  // Else the budgets the campaign's presets were emitted for.
  return json(query_all(
      db, "SELECT name, MAX(budget_bytes) FROM presets WHERE campaign_id = ? GROUP BY name",
      [](SQLite::Statement& q) {
        return json{{"name", q.getColumn(0).getString()}, {"bytes", value(q.getColumn(1))}};
      },
      campaign_id));
}

std::optional<json> run(Store& store, std::int64_t trial_id) {
  SQLite::Database& db = store_detail::connection(store);
  auto r = query_one(db,
                     "SELECT id, campaign_id, trial_key, purpose, config_key, config_json, seed, "
                     "steps, micro_batch, grad_accum, repeat, state, disposition, run_ok, reason, "
                     "started_at, finished_at, wall_s, exit_code, signal, samples_per_s, "
                     "tokens_per_s, peak_allocated_bytes, peak_reserved_bytes, breakdown_json, "
                     "param_digest, optimizer_digest, eval_loss, eval_loss_bits FROM trials "
                     "WHERE id = ?",
                     row, trial_id);
  if (!r) return std::nullopt;
  (*r)["config"] = parse_or((*r)["config_json"], json::object());
  (*r)["breakdown"] = parse_or((*r)["breakdown_json"], json::object());
  r->erase("config_json");
  r->erase("breakdown_json");
  (*r)["steps"] = rows(db,
                       "SELECT step, loss, loss_bits, grad_norm, grad_norm_bits, seconds FROM "
                       "steps WHERE trial_id = ? ORDER BY step",
                       trial_id);
  return r;
}

std::optional<RunLog> run_log(Store& store, std::int64_t trial_id, const std::string& stream) {
  SQLite::Database& db = store_detail::connection(store);
  if (stream != "stdout" && stream != "stderr") return std::nullopt;
  const std::string reused = has_column(db, "trials", "reused_from") ? "reused_from" : "NULL";
  // (campaign_id, reused_from) of a run; reused_from 0 when it was not warm-started.
  const auto owner = [&](std::int64_t id) {
    return query_one(
        db, "SELECT campaign_id, " + reused + " FROM trials WHERE id = ?",
        [](SQLite::Statement& q) {
          return std::make_pair(q.getColumn(0).getInt64(), q.getColumn(1).getInt64());
        },
        id);
  };
  const auto path = query_one(
      db, "SELECT " + stream + "_log FROM trials WHERE id = ? AND " + stream + "_log IS NOT NULL",
      first_text, trial_id);
  const auto self = owner(trial_id);
  if (!path || !self) return std::nullopt;
  RunLog out{*path, {{self->first, trial_id}}};
  // A warm-started run keeps the log of the run it copies (another campaign's directory).
  std::int64_t from = self->second;
  for (int hops = 0; from && hops < 8; ++hops) {
    const auto next = owner(from);
    if (!next) break;
    out.owners.emplace_back(next->first, from);
    from = next->second;
  }
  return out;
}

}  // namespace sg::agent::dashboard
