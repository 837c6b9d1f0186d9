// SQL fragments and JSON row readers the dashboard's query modules share. Store-internal.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "agent/store/statement.hpp"

namespace sg::agent::dashboard {

// SQL for a REAL column that may hold the text 'NaN'/'Inf' (how the store keeps non-finite
// values): its number, or NULL (which MAX and JSON skip).
std::string finite(const std::string& column);

bool has_column(SQLite::Database& db, const std::string& table, const std::string& column);

// SQL expression list for the interval columns of evaluations aliased `v`: real columns
// where the schema has them, NULL otherwise.
std::string interval_columns(SQLite::Database& db);

// A column as JSON: numbers stay numbers, the stored 'NaN'/'Inf' texts become null
// (JSON has no NaN), other text stays text.
nlohmann::json value(const SQLite::Column& c);

// The current row as {column name: value(column)}.
nlohmann::json row(SQLite::Statement& q);

// Every row of sql (args bound), as a JSON array of row()s.
template <class... Args>
nlohmann::json rows(SQLite::Database& db, const std::string& sql, const Args&... args) {
  return nlohmann::json(query_all(db, sql, row, args...));
}

// The JSON text of sql's one value (a json_group_array); "[]" when it is NULL.
template <class... Args>
std::string json_array_of(SQLite::Database& db, const std::string& sql, const Args&... args) {
  const auto text = query_one(
      db, sql,
      [](SQLite::Statement& q) {
        const SQLite::Column c = q.getColumn(0);
        return c.isNull() ? std::string("[]") : c.getString();
      },
      args...);
  return text.value_or("[]");
}

// A stored JSON text, parsed; fallback when it is not a string or not JSON.
// The id of the newest campaign; nullopt when there is none.
std::optional<std::int64_t> newest_campaign_id(SQLite::Database& db);

nlohmann::json parse_or(const nlohmann::json& text, nlohmann::json fallback);

}  // namespace sg::agent::dashboard
