#include "agent/store/queries/query_sql.hpp"

#include <cmath>

namespace sg::agent::dashboard {

using nlohmann::json;

std::string finite(const std::string& column) {
  return "CASE WHEN typeof(" + column + ") IN ('integer', 'real') THEN " + column + " END";
}

std::optional<std::int64_t> newest_campaign_id(SQLite::Database& db) {
  return query_one(db, "SELECT id FROM campaigns ORDER BY id DESC LIMIT 1", first_int64);
}

bool has_column(SQLite::Database& db, const std::string& table, const std::string& column) {
  return query_one(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", first_int64, table,
                   column)
      .has_value();
}

std::string interval_columns(SQLite::Database& db) {
  const auto col = [&](const std::string& c) {
    return has_column(db, "evaluations", c) ? finite("v." + c) : std::string("NULL");
  };
  return col("speedup_lo") + " AS speedup_lo, " + col("speedup_hi") + " AS speedup_hi, " +
         (has_column(db, "evaluations", "pairs") ? std::string("v.pairs") : std::string("NULL")) +
         " AS pairs";
}

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

json parse_or(const json& text, json fallback) {
  if (!text.is_string()) return fallback;
  auto parsed = json::parse(text.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

}  // namespace sg::agent::dashboard
