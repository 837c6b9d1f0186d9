// SQL fragments the dashboard's query modules share. Store-internal.
#pragma once
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>

namespace sg::agent::dashboard {

// SQL for a REAL column that may hold the text 'NaN'/'Inf' (how the store keeps non-finite
// values): its number, or NULL (which MAX and JSON skip).
std::string finite(const std::string& column);

bool has_column(SQLite::Database& db, const std::string& table, const std::string& column);

// SQL expression list for the interval columns of evaluations aliased `v`: real columns
// where the schema has them, NULL otherwise.
std::string interval_columns(SQLite::Database& db);

}  // namespace sg::agent::dashboard
