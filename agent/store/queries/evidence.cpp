#include "agent/store/queries/evidence.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "agent/store/connection.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/queries/query_sql.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

json number_or_null(const SQLite::Column& c) {
  if (c.isInteger() || c.isFloat()) {
    const double d = c.getDouble();
    return std::isfinite(d) ? json(d) : json(nullptr);
  }
  return nullptr;
}

// One run's loss per step: {trial_id, seed, step: [], loss: []}.
json loss_curve(SQLite::Database& db, std::int64_t trial_id) {
  json out = {{"trial_id", trial_id}, {"step", json::array()}, {"loss", json::array()}};
  SQLite::Statement s(db,
                      "SELECT t.seed, st.step, st.loss FROM trials t LEFT JOIN steps st ON "
                      "st.trial_id = t.id WHERE t.id = ? ORDER BY st.step");
  s.bind(1, trial_id);
  while (s.executeStep()) {
    out["seed"] = s.getColumn(0).getInt64();
    if (s.getColumn(1).isNull()) continue;
    out["step"].push_back(s.getColumn(1).getInt64());
    out["loss"].push_back(number_or_null(s.getColumn(2)));
  }
  return out;
}

// RMS over steps of (run - ref), as the gate computes it; NaN when not comparable.
double rms_deviation(const json& run, const json& ref) {
  const auto& a = run["loss"];
  const auto& b = ref["loss"];
  if (a.size() != b.size() || a.empty()) return std::nan("");
  double sq = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number() || !b[i].is_number()) return std::nan("");
    const double e = a[i].get<double>() - b[i].get<double>();
    sq += e * e;
  }
  return std::sqrt(sq / static_cast<double>(a.size()));
}

double band_factor(SQLite::Database& db, std::int64_t campaign_id) {
  constexpr double kDefault = 2.0;  // kDefaultBandFactor, for options without one
  return query_one(
             db, "SELECT json_extract(options_json, '$.band_factor') FROM campaigns WHERE id = ?",
             [](SQLite::Statement& q) {
               const SQLite::Column c = q.getColumn(0);
               return c.isFloat() || c.isInteger() ? c.getDouble() : kDefault;
             },
             campaign_id)
      .value_or(kDefault);
}

json loss_evidence(SQLite::Database& db, std::int64_t campaign_id, std::int64_t steps,
                   const json& runs) {
  json out = json::object();
  SQLite::Statement b(db,
                      "SELECT role, trial_id FROM baselines WHERE campaign_id = ? AND steps = ? "
                      "AND role IN ('preflight_a', 'band') ORDER BY role DESC, seed");
  b.bind(1, campaign_id);
  b.bind(2, static_cast<std::int64_t>(steps));
  json seeds = json::array();
  while (b.executeStep()) {
    const std::string role = b.getColumn(0).getString();
    const json curve = loss_curve(db, b.getColumn(1).getInt64());
    if (role == "preflight_a")
      out["baseline"] = curve;
    else
      seeds.push_back(curve);
  }
  out["band_seeds"] = seeds;
  for (const auto& r : runs) {
    if (r["purpose"] == "candidate") {
      out["candidate"] = loss_curve(db, r["id"].get<std::int64_t>());
      break;
    }
  }
  if (!out.contains("baseline")) return out;
  double band = 0;
  bool known = true;
  for (const auto& s : seeds) {
    const double d = rms_deviation(s, out["baseline"]);
    if (std::isnan(d))
      known = false;
    else
      band = std::max(band, d);
  }
  const double factor = band_factor(db, campaign_id);
  out["factor"] = factor;
  out["band_rms"] = known && !seeds.empty() ? json(band) : json(nullptr);
  out["limit"] = known && !seeds.empty() ? json(band * factor) : json(nullptr);
  if (out.contains("candidate")) {
    const double d = rms_deviation(out["candidate"], out["baseline"]);
    out["candidate_rms"] = std::isnan(d) ? json(nullptr) : json(d);
  }
  return out;
}

// The evaluation's speed pairs: from speed_pairs when the schema has it, else from its
// runs (speed_base i with speed_cand i; a gate run timed as pair 0 when the bases
// outnumber the candidates).
json speed_pairs(SQLite::Database& db, std::int64_t evaluation_id, const json& runs,
                 std::string* source) {
  json out = json::array();
  if (db.tableExists("speed_pairs")) {
    out = query_all(
        db,
        "SELECT pair_index, base_trial_id, cand_trial_id, base_step_s, cand_step_s, "
        "log_ratio FROM speed_pairs WHERE evaluation_id = ? ORDER BY pair_index",
        [](SQLite::Statement& q) {
          const json lr = number_or_null(q.getColumn(5));
          return json{{"index", q.getColumn(0).getInt64()},
                      {"base_trial_id", number_or_null(q.getColumn(1))},
                      {"cand_trial_id", number_or_null(q.getColumn(2))},
                      {"base_step_s", number_or_null(q.getColumn(3))},
                      {"cand_step_s", number_or_null(q.getColumn(4))},
                      {"ratio", lr.is_number() ? json(std::exp(lr.get<double>())) : json(nullptr)}};
        },
        evaluation_id);
    *source = "speed_pairs";
    if (!out.empty()) return out;
  }
  std::vector<const json*> bases, cands;
  const json* gate_run = nullptr;
  for (const auto& r : runs) {
    if (r["purpose"] == "speed_base") bases.push_back(&r);
    if (r["purpose"] == "speed_cand") cands.push_back(&r);
    if (r["purpose"] == "candidate" && !gate_run) gate_run = &r;
  }
  if (gate_run && bases.size() == cands.size() + 1) cands.insert(cands.begin(), gate_run);
  for (std::size_t i = 0; i < std::min(bases.size(), cands.size()); ++i) {
    const json& a = (*bases[i])["samples_per_s"];
    const json& b = (*cands[i])["samples_per_s"];
    const bool both = a.is_number() && b.is_number() && a.get<double>() > 0;
    out.push_back({{"index", i},
                   {"base_trial_id", (*bases[i])["id"]},
                   {"cand_trial_id", (*cands[i])["id"]},
                   {"base_samples_per_s", a},
                   {"cand_samples_per_s", b},
                   {"ratio", both ? json(b.get<double>() / a.get<double>()) : json(nullptr)}});
  }
  *source = "runs";
  return out;
}

}  // namespace

std::optional<json> evaluation_evidence(Store& store, std::int64_t evaluation_id) {
  SQLite::Database& db = store_detail::connection(store);
  SQLite::Statement q(db,
                      "SELECT v.id, v.campaign_id, v.strategy, v.config_key, v.steps, "
                      "v.disposition, v.gate_class, v.reason, " +
                          finite("v.speedup") + " AS speedup, " + finite("v.speedup_spread") +
                          " AS speedup_spread, " + interval_columns(db) +
                          ", v.trial_ids_json FROM evaluations v WHERE v.id = ?");
  q.bind(1, evaluation_id);
  if (!q.executeStep()) return std::nullopt;
  json e = json::object();
  for (int i = 0; i < q.getColumnCount() - 1; ++i) {
    const auto c = q.getColumn(i);
    e[q.getColumnName(i)] = c.isNull()      ? json(nullptr)
                            : c.isInteger() ? json(c.getInt64())
                            : c.isFloat()   ? number_or_null(c)
                                            : json(c.getString());
  }
  const json ids = json::parse(q.getColumn(q.getColumnCount() - 1).getString(), nullptr, false);
  e["trial_ids"] = ids.is_array() ? ids : json::array();
  const json runs = query_all(
      db,
      "SELECT t.id, t.purpose, t.seed, t.steps, t.micro_batch, t.repeat, t.disposition, "
      "t.run_ok, " +
          finite("t.samples_per_s") +
          " FROM json_each(?) j JOIN trials t ON t.id = j.value "
          "ORDER BY j.key",
      [](SQLite::Statement& r) {
        return json{{"id", r.getColumn(0).getInt64()},
                    {"purpose", r.getColumn(1).getString()},
                    {"seed", r.getColumn(2).getInt64()},
                    {"steps", r.getColumn(3).getInt64()},
                    {"micro_batch", r.getColumn(4).getInt64()},
                    {"repeat", r.getColumn(5).getInt64()},
                    {"disposition",
                     r.getColumn(6).isNull() ? json(nullptr) : json(r.getColumn(6).getString())},
                    {"run_ok",
                     r.getColumn(7).isNull() ? json(nullptr) : json(r.getColumn(7).getInt() != 0)},
                    {"samples_per_s", number_or_null(r.getColumn(8))}};
      },
      e["trial_ids"].dump());
  std::string source;
  json pairs = speed_pairs(db, evaluation_id, runs, &source);
  json out = {{"evaluation", e},
              {"runs", runs},
              {"loss", loss_evidence(db, e["campaign_id"].get<std::int64_t>(),
                                     e["steps"].get<std::int64_t>(), runs)},
              {"pairs", pairs},
              {"pairs_source", source}};
  return out;
}

namespace {

// The manifest's prerequisites: switch name -> the "NAME=VALUE" entries it requires.
std::map<std::string, std::vector<std::string>> prerequisites(SQLite::Database& db,
                                                              std::int64_t campaign_id) {
  std::map<std::string, std::vector<std::string>> out;
  const json manifest = json::parse(
      query_one(db, "SELECT manifest_json FROM campaigns WHERE id = ?", first_text, campaign_id)
          .value_or(""),
      nullptr, false);
  if (!manifest.is_object() || !manifest.contains("switches") || !manifest["switches"].is_array())
    return out;
  for (const auto& sw : manifest["switches"]) {
    if (!sw.is_object() || !sw.value("name", json()).is_string() ||
        !sw.value("requires", json()).is_array())
      continue;
    for (const auto& r : sw["requires"]) {
      if (r.is_string()) out[sw["name"].get<std::string>()].push_back(r.get<std::string>());
    }
  }
  return out;
}

// The one switch a configuration adds once the entries other switches in it require
// are set aside ("TEXT_CACHE=1,TEXT_CACHE_ENTRIES=8" -> TEXT_CACHE_ENTRIES, with
// TEXT_CACHE=1); nullopt when it sets more than one switch of its own.
std::optional<std::string> own_switch(const json& config,
                                      const std::map<std::string, std::vector<std::string>>& reqs,
                                      json* with) {
  if (!config.is_object()) return std::nullopt;
  std::map<std::string, bool> required;
  for (const auto& [name, v] : config.items()) {
    const auto it = reqs.find(name);
    if (it == reqs.end()) continue;
    for (const auto& r : it->second) {
      const auto eq = r.find('=');
      const std::string key = r.substr(0, eq);
      if (key != name && config.contains(key) && config[key].is_string() &&
          (eq == std::string::npos || config[key].get<std::string>() == r.substr(eq + 1))) {
        required[key] = true;
      }
    }
  }
  std::optional<std::string> own;
  for (const auto& [name, v] : config.items()) {
    if (required.count(name)) {
      with->push_back(name + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
      continue;
    }
    if (own) return std::nullopt;
    own = name;
  }
  return own;
}

}  // namespace

json switch_effects(Store& store, std::int64_t campaign_id) {
  SQLite::Database& db = store_detail::connection(store);
  const auto reqs = prerequisites(db, campaign_id);
  SQLite::Statement q(db, "SELECT v.id, v.strategy, v.config_key, v.config_json, v.disposition, " +
                              finite("v.speedup") + " AS speedup, " + finite("v.speedup_spread") +
                              " AS speedup_spread, " + interval_columns(db) +
                              " FROM evaluations v WHERE v.campaign_id = ? AND v.config_key != '' "
                              "AND v.id IN (SELECT MAX(id) FROM evaluations WHERE campaign_id = ? "
                              "GROUP BY config_key)");
  q.bind(1, campaign_id);
  q.bind(2, campaign_id);
  json out = json::array();
  while (q.executeStep()) {
    const json config = json::parse(q.getColumn(3).getString(), nullptr, false);
    json with = json::array();
    const auto own = own_switch(config, reqs, &with);
    if (!own) continue;
    const json& value = config[*own];
    json s = {{"evaluation_id", q.getColumn(0).getInt64()},
              {"strategy", q.getColumn(1).getString()},
              {"config_key", q.getColumn(2).getString()},
              {"switch", *own},
              {"value", value.is_string() ? value : json(value.dump())},
              {"with", with},
              {"disposition", q.getColumn(4).getString()},
              {"speedup", number_or_null(q.getColumn(5))},
              {"spread", number_or_null(q.getColumn(6))},
              {"speedup_lo", number_or_null(q.getColumn(7))},
              {"speedup_hi", number_or_null(q.getColumn(8))},
              {"pairs", q.getColumn(9).isNull() ? json(nullptr) : json(q.getColumn(9).getInt64())}};
    // The interval shown: the paired 95 % bounds when recorded, else ± half the range.
    if (!s["speedup_lo"].is_number() && s["speedup"].is_number() && s["spread"].is_number()) {
      s["interval"] = "spread";
      s["lo"] = s["speedup"].get<double>() - s["spread"].get<double>();
      s["hi"] = s["speedup"].get<double>() + s["spread"].get<double>();
    } else {
      s["interval"] = s["speedup_lo"].is_number() ? "paired 95 %" : "none";
      s["lo"] = s["speedup_lo"];
      s["hi"] = s["speedup_hi"];
    }
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const json& a, const json& b) {
    const double x = a["speedup"].is_number() ? a["speedup"].get<double>() : -1;
    const double y = b["speedup"].is_number() ? b["speedup"].get<double>() : -1;
    return x > y;
  });
  return out;
}

}  // namespace sg::agent::dashboard
