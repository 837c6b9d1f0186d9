// The store's one row mapper: each row type has one RowMap, a list of (SQL column,
// struct member) pairs. The map writes the SELECT list and reads a result row in that
// same order, and writes an INSERT and binds a row to it the same way, so a column's
// name and its position can never drift apart. Store-internal.
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

// How a member binds as a stored value: JSON as its text, id lists as a JSON array, the
// rest as bind_value binds them.
template <class T>
void bind_member(SQLite::Statement& st, int index, const T& v) {
  bind_value(st, index, v);
}
inline void bind_member(SQLite::Statement& st, int index, const nlohmann::json& v) {
  st.bind(index, v.dump());
}
inline void bind_member(SQLite::Statement& st, int index, const std::vector<std::int64_t>& v) {
  st.bind(index, ids_json(v));
}

template <class Row>
class RowMap {
 public:
  struct Column {
    std::string sql;        // a column name or expression of the SELECT
    int since_version = 1;  // the schema version that added it; older files read NULL
    std::function<void(Row&, const SQLite::Column&)> read;
    // Binds the member for an INSERT; empty for a column SQLite fills (read_only).
    std::function<void(SQLite::Statement&, int, const Row&)> write;
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

  // "<head>(a, b, c) VALUES(?, ?, ?)" over the written columns, for a head like
  // "INSERT OR REPLACE INTO host_noise"; insert binds a row's values in that order.
  std::string insert_sql(const std::string& head) const {
    std::string names, marks;
    for (const auto& c : columns_) {
      if (!c.write) continue;
      names += (names.empty() ? "" : ", ") + c.sql;
      marks += marks.empty() ? "?" : ", ?";
    }
    return head + "(" + names + ") VALUES(" + marks + ")";
  }

  // One row through st, prepared from insert_sql (a batch reuses it).
  void insert(SQLite::Statement& st, const Row& row) const {
    st.reset();
    int index = 0;
    for (const auto& c : columns_) {
      if (c.write) c.write(st, ++index, row);
    }
    st.exec();
  }
  void insert(SQLite::Database& db, const std::string& head, const Row& row) const {
    SQLite::Statement st(db, insert_sql(head));
    insert(st, row);
  }

  int size() const { return static_cast<int>(columns_.size()); }

 private:
  std::vector<Column> columns_;
};

// A column read into `member` by read_value and written from it by bind_member.
template <class Row, class T>
typename RowMap<Row>::Column col(std::string sql, T Row::*member, int since_version = 1) {
  return {std::move(sql), since_version,
          [member](Row& r, const SQLite::Column& c) { read_value(c, r.*member); },
          [member](SQLite::Statement& st, int i, const Row& r) { bind_member(st, i, r.*member); }};
}

// A REAL column where NULL means "not measured": reads NaN.
template <class Row>
typename RowMap<Row>::Column col_or_nan(std::string sql, double Row::*member,
                                        int since_version = 1) {
  auto c = col(std::move(sql), member, since_version);
  c.read = [member](Row& r, const SQLite::Column& v) { r.*member = column_real_or_nan(v); };
  return c;
}

// An id column where NULL means "none": reads 0, and 0 writes NULL.
template <class Row>
typename RowMap<Row>::Column id_or_null(std::string sql, std::int64_t Row::*member) {
  auto c = col(std::move(sql), member);
  c.write = [member](SQLite::Statement& st, int i, const Row& r) {
    bind_value(st, i, r.*member ? std::optional<std::int64_t>(r.*member) : std::nullopt);
  };
  return c;
}

// A column SQLite fills on INSERT (the rowid id, a DEFAULT): read, never written.
template <class Column>
Column read_only(Column c) {
  c.write = nullptr;
  return c;
}

}  // namespace sg::agent

// SG_COLUMNS(Row, a, b) is col("a", &Row::a), col("b", &Row::b): the columns whose SQL
// name is the member's name (col spells out the others). SG_COLUMNS_NEXT repeats by
// rescanning (SG_COLUMNS_SCAN: up to 64 names) and stops after the last name by
// __VA_OPT__, which GCC and Clang accept in C++17 too.
#define SG_COLUMNS(Row, ...) SG_COLUMNS_SCAN(SG_COLUMNS_NEXT(Row, __VA_ARGS__))
#define SG_COLUMNS_NEXT(Row, name, ...) \
  ::sg::agent::col(#name, &Row::name)   \
      __VA_OPT__(, SG_COLUMNS_AGAIN SG_COLUMNS_PARENS(Row, __VA_ARGS__))
#define SG_COLUMNS_AGAIN() SG_COLUMNS_NEXT
#define SG_COLUMNS_PARENS ()
#define SG_COLUMNS_SCAN(...) \
  SG_COLUMNS_SCAN3(SG_COLUMNS_SCAN3(SG_COLUMNS_SCAN3(SG_COLUMNS_SCAN3(__VA_ARGS__))))
#define SG_COLUMNS_SCAN3(...) \
  SG_COLUMNS_SCAN2(SG_COLUMNS_SCAN2(SG_COLUMNS_SCAN2(SG_COLUMNS_SCAN2(__VA_ARGS__))))
#define SG_COLUMNS_SCAN2(...) \
  SG_COLUMNS_SCAN1(SG_COLUMNS_SCAN1(SG_COLUMNS_SCAN1(SG_COLUMNS_SCAN1(__VA_ARGS__))))
#define SG_COLUMNS_SCAN1(...) __VA_ARGS__
