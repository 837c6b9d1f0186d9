// Opening, migrating and writing: the connection every per-table file uses.
#include "agent/store/store.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include "agent/common/errors.hpp"
#include "agent/store/connection.hpp"
#include "agent/store/schema.hpp"

namespace sg::agent {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

SQLite::Database& store_detail::connection(Store& store) { return *store.db_; }

namespace {

// Switching a fresh file to WAL takes an exclusive lock and SQLite answers SQLITE_BUSY
// at once, without the busy handler, when another controller is opening the same
// fresh file: retry for up to the busy timeout like every other lock wait.
void set_wal_waiting_for_locks(SQLite::Database& db) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    try {
      db.exec("PRAGMA journal_mode=WAL");
      return;
    } catch (const SQLite::Exception& e) {
      if (e.getErrorCode() != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
    }
    ::usleep(10 * 1000);
  }
}

// "file:PATH?immutable=1" with the characters a URI path may not hold escaped.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%') {
      uri += "%25";
    } else if (c == '?') {
      uri += "%3f";
    } else if (c == '#') {
      uri += "%23";
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

std::unique_ptr<SQLite::Database> open_immutable(const std::string& path) {
  return std::make_unique<SQLite::Database>(
      immutable_uri(path), SQLite::OPEN_READONLY | SQLite::OPEN_URI, kBusyTimeoutMs);
}

int user_version(SQLite::Database& db) { return db.execAndGet("PRAGMA user_version").getInt(); }

// Inside a catch block: a full disk (SQLITE_FULL, also from max_page_count) becomes
// a StoreError naming the database; the transaction was rolled back, so the file is
// intact. Anything else is rethrown unchanged.
[[noreturn]] void rethrow_storage_failure(const std::string& path) {
  try {
    throw;
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() != SQLITE_FULL) throw;
    throw StoreError(
        fmt::format("database {} is full (no space left on its disk, or its size limit): {}; "
                    "the write was rolled back and the database is intact, free space and rerun",
                    path, e.what()));
  }
}

}  // namespace

Store::Store(const std::string& path, bool read_only) : read_only_(read_only) {
  open(path, read_only);
  if (read_only) {
    int v = 0;
    try {
      v = schema_version();
    } catch (const SQLite::Exception& e) {
      const int code = e.getErrorCode();
      // A WAL database we may not write (read-only file or directory) cannot get its
      // -shm file. With no -wal file there is no writer with unmerged pages, so the
      // file itself is the whole database: read it as an immutable snapshot.
      if ((code != SQLITE_READONLY && code != SQLITE_CANTOPEN) ||
          std::filesystem::exists(path + "-wal")) {
        throw StoreError("cannot read database " + path + ": " + e.what());
      }
      try {
        db_ = open_immutable(path);
        v = schema_version();
      } catch (const SQLite::Exception& again) {
        throw StoreError("cannot read database " + path + ": " + again.what());
      }
    }
    if (v > kSchemaVersion) {
      throw StoreError(
          fmt::format("database {} has schema version {} but this speedgate knows {}; "
                      "use a newer speedgate",
                      path, v, kSchemaVersion));
    }
    // An older initialised schema is readable: later migrations only add tables and
    // columns that read-only users (serve, report) do not need.
    if (v < 1) throw StoreError("database " + path + " is not initialised (read-only open)");
    return;
  }
  try {
    migrate();
  } catch (const SQLite::Exception& e) {
    throw StoreError("cannot migrate database " + path + ": " + e.what());
  }
}

Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

void Store::open(const std::string& path, bool read_only) {
  try {
    const int flags =
        read_only ? SQLite::OPEN_READONLY : (SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    // A reader of a WAL database with no -wal/-shm (no connection open) would create both
    // and, unable to checkpoint, leave them: read such a file as an immutable snapshot.
    namespace fs = std::filesystem;
    std::error_code ec;
    if (read_only && fs::is_regular_file(path, ec) && !fs::exists(path + "-wal", ec) &&
        !fs::exists(path + "-shm", ec)) {
      db_ = open_immutable(path);
    } else {
      db_ = std::make_unique<SQLite::Database>(path, flags, kBusyTimeoutMs);
    }
    if (!read_only) {
      set_wal_waiting_for_locks(*db_);
      db_->exec("PRAGMA foreign_keys=ON");
      db_->exec("PRAGMA synchronous=NORMAL");
    }
  } catch (const SQLite::Exception& e) {
    throw StoreError("cannot open database " + path + ": " + e.what());
  }
}

int Store::schema_version() { return user_version(*db_); }

void Store::migrate() {
  db_->exec("BEGIN IMMEDIATE");
  try {
    const int v = schema_version();
    if (v > kSchemaVersion) {
      throw StoreError(
          fmt::format("database {} has schema version {} but this speedgate knows {}; "
                      "refusing to touch it (use a newer speedgate)",
                      db_->getFilename(), v, kSchemaVersion));
    }
    for (const auto& m : migrations()) {
      if (m.to_version <= v) continue;
      db_->exec(m.sql);
      db_->exec(fmt::format("PRAGMA user_version = {}", m.to_version));
    }
    // Migration 6 edits CHECK constraints in the schema text (writable_schema): a new schema
    // cookie makes every connection, this one included, parse the schema again.
    if (v < 6 && kSchemaVersion >= 6) {
      const int cookie = db_->execAndGet("PRAGMA schema_version").getInt();
      db_->exec(fmt::format("PRAGMA schema_version = {}", cookie + 1));
    }
    db_->exec("COMMIT");
  } catch (...) {
    db_->exec("ROLLBACK");
    throw;
  }
}

void Store::write(const std::function<void()>& f) {
  if (sqlite3_get_autocommit(db_->getHandle()) == 0) {  // already inside our transaction
    f();
    return;
  }
  db_->exec("BEGIN IMMEDIATE");
  try {
    f();
    db_->exec("COMMIT");
  } catch (...) {
    try {
      db_->exec("ROLLBACK");
    } catch (...) {
    }
    rethrow_storage_failure(db_->getFilename());
  }
}

}  // namespace sg::agent
