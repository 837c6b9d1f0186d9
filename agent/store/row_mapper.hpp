// The store's one row mapper: each row type has one RowMap, a list of (SQL column,
// struct member) pairs. The map writes the SELECT list and reads a result row in that
// same order, so a column's name and its position can never drift apart. Store-internal.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "agent/common/disposition.hpp"
#include "agent/store/schema.hpp"
#include "agent/store/sql_value.hpp"
#include "agent/store/statement.hpp"

namespace sg::agent {

// How one stored value reads into a member of type T. NULL reads as the type's empty
// value (0, "", nullopt); REALs go through column_real (NaN stored as text).
inline void read_value(const SQLite::Column& c, std::int64_t& v) { v = c.getInt64(); }
inline void read_value(const SQLite::Column& c, int& v) { v = c.getInt(); }
inline void read_value(const SQLite::Column& c, bool& v) { v = c.getInt() != 0; }
inline void read_value(const SQLite::Column& c, double& v) { v = column_real(c); }
inline void read_value(const SQLite::Column& c, std::string& v) { v = column_text(c); }
// Malformed JSON reads as a discarded value.
inline void read_value(const SQLite::Column& c, nlohmann::json& v) {
  v = nlohmann::json::parse(column_text(c), nullptr, /*allow_exceptions=*/false);
}
inline void read_value(const SQLite::Column& c, std::vector<std::int64_t>& v) {
  v = ids_from_json(column_text(c));
}
// An unknown name reads as crash (the CHECK constraint keeps them out).
inline void read_value(const SQLite::Column& c, Disposition& v) {
  v = disposition_from_string(column_text(c)).value_or(Disposition::crash);
}
inline void read_value(const SQLite::Column& c, std::optional<Disposition>& v) {
  const std::string s = column_text(c);
  v = s.empty() ? std::nullopt : disposition_from_string(s);
}
template <class T>
void read_value(const SQLite::Column& c, std::optional<T>& v) {
  if (c.isNull()) {
    v.reset();
  } else {
    T value{};
    read_value(c, value);
    v = std::move(value);
  }
}

template <class Row>
class RowMap {
 public:
  struct Column {
    std::string sql;        // a column name or expression of the SELECT
    int since_version = 1;  // the schema version that added it; older files read NULL
    std::function<void(Row&, const SQLite::Column&)> read;
  };

  RowMap(std::initializer_list<Column> columns) : columns_(columns) {}

  // "a, b, c", each prefixed with `alias.` when given; a column newer than
  // `schema_version` is written NULL (a read-only open of an older file).
  std::string select_list(int schema_version = kSchemaVersion,
                          const std::string& alias = "") const {
    std::string out;
    for (const auto& c : columns_) {
      if (!out.empty()) out += ", ";
      if (c.since_version > schema_version) {
        out += "NULL";
      } else {
        out += alias.empty() ? c.sql : alias + "." + c.sql;
      }
    }
    return out;
  }

  // The row at q's current step, from its columns [first, first + size()).
  Row read(SQLite::Statement& q, int first = 0) const {
    Row row;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      columns_[i].read(row, q.getColumn(first + static_cast<int>(i)));
    }
    return row;
  }

  // Every remaining row of q.
  std::vector<Row> read_all(SQLite::Statement& q) const {
    std::vector<Row> out;
    while (q.executeStep()) out.push_back(read(q));
    return out;
  }

  // A row reader for query_one/query_all: the row from the first column.
  Row operator()(SQLite::Statement& q) const { return read(q); }

  // "SELECT <columns> <rest>" with args bound (select_list(version) for the columns): the
  // first row (nullopt when there is none) or every row.
  template <class... Args>
  std::optional<Row> select_one(SQLite::Database& db, const std::string& rest,
                                const Args&... args) const {
    return query_one(db, "SELECT " + select_list() + " " + rest, *this, args...);
  }
  template <class... Args>
  std::vector<Row> select_all(SQLite::Database& db, const std::string& rest,
                              const Args&... args) const {
    return select_all_at(db, kSchemaVersion, rest, args...);
  }
  template <class... Args>
  std::vector<Row> select_all_at(SQLite::Database& db, int version, const std::string& rest,
                                 const Args&... args) const {
    return query_all(db, "SELECT " + select_list(version) + " " + rest, *this, args...);
  }

  int size() const { return static_cast<int>(columns_.size()); }

 private:
  std::vector<Column> columns_;
};

// A column read into `member` by read_value.
template <class Row, class T>
typename RowMap<Row>::Column col(std::string sql, T Row::*member, int since_version = 1) {
  return {std::move(sql), since_version,
          [member](Row& r, const SQLite::Column& c) { read_value(c, r.*member); }};
}

// A REAL column where NULL means "not measured": reads NaN.
template <class Row>
typename RowMap<Row>::Column col_or_nan(std::string sql, double Row::*member,
                                        int since_version = 1) {
  return {std::move(sql), since_version,
          [member](Row& r, const SQLite::Column& c) { r.*member = column_real_or_nan(c); }};
}

}  // namespace sg::agent
