// Running one statement: bind its values in order, then execute it or read its rows. Each
// store module reads as its SQL, its values and (for reads) how a row maps to a value.
// Store-internal: only files under agent/store/ include it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>

#include "agent/common/disposition.hpp"
#include "agent/store/connection.hpp"
#include "agent/store/sql_value.hpp"

namespace sg::agent {

// How one value binds: doubles NaN-safe (bind_real), bools as 0/1, dispositions by name,
// nullopt and empty optionals as NULL; integers and text as they are.
inline void bind_value(SQLite::Statement& st, int index, int v) { st.bind(index, v); }
inline void bind_value(SQLite::Statement& st, int index, std::int64_t v) { st.bind(index, v); }
inline void bind_value(SQLite::Statement& st, int index, bool v) { st.bind(index, v ? 1 : 0); }
inline void bind_value(SQLite::Statement& st, int index, double v) { bind_real(st, index, v); }
inline void bind_value(SQLite::Statement& st, int index, const char* v) { st.bind(index, v); }
inline void bind_value(SQLite::Statement& st, int index, const std::string& v) {
  st.bind(index, v);
}
inline void bind_value(SQLite::Statement& st, int index, Disposition d) {
  st.bind(index, std::string(to_string(d)));
}
inline void bind_value(SQLite::Statement& st, int index, std::nullopt_t) { st.bind(index); }
template <class T>
void bind_value(SQLite::Statement& st, int index, const std::optional<T>& v) {
  if (v) {
    bind_value(st, index, *v);
  } else {
    st.bind(index);
  }
}

// Binds args to parameters 1..N (after a reset() when the statement ran before).
template <class... Args>
void bind_all(SQLite::Statement& st, const Args&... args) {
  [[maybe_unused]] int index = 0;
  (bind_value(st, ++index, args), ...);
}

// Prepares sql, binds args and runs it; returns the number of rows it changed.
template <class... Args>
int exec(SQLite::Database& db, const std::string& sql, const Args&... args) {
  SQLite::Statement st(db, sql);
  bind_all(st, args...);
  return st.exec();
}

// Runs a prepared statement again with new values (one row of a batch).
template <class... Args>
void exec_again(SQLite::Statement& st, const Args&... args) {
  st.reset();
  bind_all(st, args...);
  st.exec();
}

// One statement in its own write transaction (Store::write).
template <class... Args>
void write_exec(Store& store, const std::string& sql, const Args&... args) {
  store.write([&] { exec(store_detail::connection(store), sql, args...); });
}

// The first row of sql, as `read` maps it; nullopt when there is none.
template <class Read, class... Args>
auto query_one(SQLite::Database& db, const std::string& sql, const Read& read, const Args&... args)
    -> std::optional<std::decay_t<decltype(read(std::declval<SQLite::Statement&>()))>> {
  SQLite::Statement q(db, sql);
  bind_all(q, args...);
  if (!q.executeStep()) return std::nullopt;
  return read(q);
}

// Every row of sql, as `read` maps it.
template <class Read, class... Args>
auto query_all(SQLite::Database& db, const std::string& sql, const Read& read,
               const Args&... args) {
  SQLite::Statement q(db, sql);
  bind_all(q, args...);
  std::vector<std::decay_t<decltype(read(q))>> out;
  while (q.executeStep()) out.push_back(read(q));
  return out;
}

// Row readers for query_one/query_all: the first column as it is.
inline std::int64_t first_int64(SQLite::Statement& q) { return q.getColumn(0).getInt64(); }
inline std::string first_text(SQLite::Statement& q) { return column_text(q.getColumn(0)); }

}  // namespace sg::agent
