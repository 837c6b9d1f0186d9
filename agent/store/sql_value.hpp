// How the store's values look in SQLite: non-finite REALs as TEXT 'NaN'/'Inf'/'-Inf'
// (SQLite would turn NaN into NULL), id lists as JSON arrays. Store-internal: only files
// under agent/store/ include it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>

namespace sg::agent {

// NaN-safe REAL binding (optionals bind through bind_value in statement.hpp).
void bind_real(SQLite::Statement& st, int index, double v);

// A REAL column as bind_real wrote it; NULL reads 0.
double column_real(const SQLite::Column& c);
// NULL reads NaN: columns where NULL means "not measured" (rows older than the column).
double column_real_or_nan(const SQLite::Column& c);
// NULL reads "".
std::string column_text(const SQLite::Column& c);

// [1,2,3] and back; a malformed list, or a non-integer entry, reads as nothing.
std::string ids_json(const std::vector<std::int64_t>& ids);
std::vector<std::int64_t> ids_from_json(const std::string& text);

}  // namespace sg::agent
