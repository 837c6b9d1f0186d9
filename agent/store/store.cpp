#include "agent/store/store.hpp"

#include <signal.h>
#include <cerrno>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "agent/common/errors.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/proc_scan.hpp"
#include "agent/protocol/config.hpp"
#include "agent/store/schema.hpp"

namespace sg::agent {

using nlohmann::json;

void bind_real(SQLite::Statement& st, int index, double v) {
  if (std::isnan(v)) st.bind(index, std::string("NaN"));
  else if (std::isinf(v)) st.bind(index, std::string(v > 0 ? "Inf" : "-Inf"));
  else st.bind(index, v);
}

void bind_real(SQLite::Statement& st, int index, const std::optional<double>& v) {
  if (v) bind_real(st, index, *v);
  else st.bind(index);
}

double column_real(const SQLite::Column& c) {
  if (c.isNull()) return 0.0;
  if (c.getType() == SQLITE_TEXT) {
    std::string s = c.getString();
    if (s == "NaN") return std::nan("");
    if (s == "Inf") return INFINITY;
    if (s == "-Inf") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return c.getDouble();
}

// For columns where NULL means "not measured" (rows from before the column existed).
double column_real_or_nan(const SQLite::Column& c) { return c.isNull() ? std::nan("") : column_real(c); }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

namespace {

std::string ids_json(const std::vector<std::int64_t>& ids) { return json(ids).dump(); }

std::vector<std::int64_t> ids_from(const std::string& s) {
  json j = json::parse(s, nullptr, false);
  std::vector<std::int64_t> out;
  if (j.is_array()) {
    for (const auto& v : j) out.push_back(v.get<std::int64_t>());
  }
  return out;
}

std::optional<int> opt_int(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt();
}

std::string text(const SQLite::Column& c) { return c.isNull() ? std::string() : c.getString(); }

const char* kTrialColumns =
    "id, campaign_id, trial_key, purpose, config_key, seed, steps, micro_batch, grad_accum, repeat, "
    "state, disposition, run_ok, reason, wall_s, samples_per_s, peak_allocated_bytes, exit_code, "
    "signal, param_digest, optimizer_digest, stdout_log, stderr_log, result_path, result_json, "
    "eval_loss, host, controller_pid, pgid, heartbeat_at, requeued_from";

TrialRow trial_from(SQLite::Statement& q) {
  TrialRow t;
  int i = 0;
  t.id = q.getColumn(i++).getInt64();
  t.campaign_id = q.getColumn(i++).getInt64();
  t.trial_key = text(q.getColumn(i++));
  t.purpose = text(q.getColumn(i++));
  t.config_key = text(q.getColumn(i++));
  t.seed = q.getColumn(i++).getInt();
  t.steps = q.getColumn(i++).getInt();
  t.micro_batch = q.getColumn(i++).getInt();
  t.grad_accum = q.getColumn(i++).getInt();
  t.repeat = q.getColumn(i++).getInt();
  t.state = text(q.getColumn(i++));
  std::string d = text(q.getColumn(i++));
  if (!d.empty()) t.disposition = disposition_from_string(d);
  t.run_ok = q.getColumn(i++).getInt() != 0;
  t.reason = text(q.getColumn(i++));
  t.wall_s = column_real(q.getColumn(i++));
  t.samples_per_s = column_real(q.getColumn(i++));
  t.peak_allocated_bytes = column_real(q.getColumn(i++));
  t.exit_code = opt_int(q.getColumn(i++));
  t.signal = opt_int(q.getColumn(i++));
  t.param_digest = text(q.getColumn(i++));
  t.optimizer_digest = text(q.getColumn(i++));
  t.stdout_log = text(q.getColumn(i++));
  t.stderr_log = text(q.getColumn(i++));
  t.result_path = text(q.getColumn(i++));
  t.result_json = text(q.getColumn(i++));
  t.eval_loss = column_real(q.getColumn(i++));
  t.host = text(q.getColumn(i++));
  t.controller_pid = q.getColumn(i++).getInt();
  t.pgid = q.getColumn(i++).getInt();
  t.heartbeat_at = column_real(q.getColumn(i++));
  if (!q.getColumn(i).isNull()) t.requeued_from = q.getColumn(i).getInt64();
  return t;
}

CampaignRow campaign_from(SQLite::Statement& q) {
  CampaignRow c;
  c.id = q.getColumn(0).getInt64();
  c.created_at = text(q.getColumn(1));
  c.finished_at = text(q.getColumn(2));
  c.state = text(q.getColumn(3));
  c.workload = text(q.getColumn(4));
  c.size = text(q.getColumn(5));
  c.trainer = text(q.getColumn(6));
  c.manifest = json::parse(text(q.getColumn(7)), nullptr, false);
  c.options = json::parse(text(q.getColumn(8)), nullptr, false);
  if (!q.getColumn(9).isNull()) c.environment_id = q.getColumn(9).getInt64();
  if (!q.getColumn(10).isNull()) c.deterministic = q.getColumn(10).getInt() != 0;
  c.note = text(q.getColumn(11));
  return c;
}

const char* kCampaignColumns =
    "id, created_at, finished_at, state, workload, size, trainer, manifest_json, options_json, "
    "environment_id, deterministic, note";

// Is `pgid` still a live trainer group on this host? Checked via /proc so a reused
// pid that now runs something else is never killed.
bool group_runs(int pgid, const std::string& trainer_hint) {
  if (pgid <= 0 || ::kill(-pgid, 0) != 0) return false;
  const std::string s = read_proc("/proc/" + std::to_string(pgid) + "/cmdline", 1 << 16);
  return !trainer_hint.empty() && s.find(trainer_hint) != std::string::npos;
}

}  // namespace

namespace {

// Switching a fresh file to WAL takes an exclusive lock and SQLite answers SQLITE_BUSY
// at once, without the busy handler, when another controller is opening the same
// fresh file: retry for up to the busy timeout like every other lock wait.
void set_wal_waiting_for_locks(SQLite::Database& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
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
    if (c == '%') uri += "%25";
    else if (c == '?') uri += "%3f";
    else if (c == '#') uri += "%23";
    else uri += c;
  }
  return uri + "?immutable=1";
}

}  // namespace

Store::Store(const std::string& path, bool read_only) : read_only_(read_only) {
  try {
    int flags = read_only ? SQLite::OPEN_READONLY : (SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    // A reader of a WAL database with no -wal/-shm (no connection open) would create both
    // and, unable to checkpoint, leave them: read such a file as an immutable snapshot.
    namespace fs = std::filesystem;
    std::error_code ec;
    if (read_only && fs::is_regular_file(path, ec) && !fs::exists(path + "-wal", ec) &&
        !fs::exists(path + "-shm", ec)) {
      db_ = std::make_unique<SQLite::Database>(immutable_uri(path), flags | SQLite::OPEN_URI,
                                               kBusyTimeoutMs);
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
  if (read_only) {
    int v = 0;
    try {
      v = schema_version();
    } catch (const SQLite::Exception& e) {
      const int code = e.getErrorCode();
      // A WAL database we may not write (read-only file or directory) cannot get its
      // -shm file. With no -wal file there is no writer with unmerged pages, so the
      // file itself is the whole database: read it as an immutable snapshot.
      if ((code != SQLITE_READONLY && code != SQLITE_CANTOPEN) || std::filesystem::exists(path + "-wal")) {
        throw StoreError("cannot read database " + path + ": " + e.what());
      }
      try {
        db_ = std::make_unique<SQLite::Database>(immutable_uri(path), SQLite::OPEN_READONLY | SQLite::OPEN_URI,
                                                 kBusyTimeoutMs);
        v = schema_version();
      } catch (const SQLite::Exception& again) {
        throw StoreError("cannot read database " + path + ": " + again.what());
      }
    }
    if (v > kSchemaVersion) {
      throw StoreError(fmt::format("database {} has schema version {} but this speedgate knows {}; "
                                   "use a newer speedgate", path, v, kSchemaVersion));
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

int Store::schema_version() { return db_->execAndGet("PRAGMA user_version").getInt(); }

void Store::migrate() {
  db_->exec("BEGIN IMMEDIATE");
  try {
    int v = schema_version();
    if (v > kSchemaVersion) {
      throw StoreError(fmt::format("database {} has schema version {} but this speedgate knows {}; "
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

namespace {

// Inside a catch block: a full disk (SQLITE_FULL, also from max_page_count) becomes
// a StoreError naming the database; the transaction was rolled back, so the file is
// intact. Anything else is rethrown unchanged.
[[noreturn]] void rethrow_storage_failure(const std::string& path) {
  try {
    throw;
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() != SQLITE_FULL) throw;
    throw StoreError(fmt::format("database {} is full (no space left on its disk, or its size limit): {}; "
                                 "the write was rolled back and the database is intact, free space and rerun",
                                 path, e.what()));
  }
}

}  // namespace

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

std::int64_t Store::upsert_environment(const std::string& hash, const json& fingerprint) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement ins(*db_, "INSERT OR IGNORE INTO environments(fingerprint_hash, fingerprint_json) VALUES(?, ?)");
    ins.bind(1, hash);
    ins.bind(2, fingerprint.dump());
    ins.exec();
    SQLite::Statement q(*db_, "SELECT id FROM environments WHERE fingerprint_hash = ?");
    q.bind(1, hash);
    q.executeStep();
    id = q.getColumn(0).getInt64();
  });
  return id;
}

std::optional<std::string> Store::environment_hash(std::int64_t id) {
  SQLite::Statement q(*db_, "SELECT fingerprint_hash FROM environments WHERE id = ?");
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  return q.getColumn(0).getString();
}

std::int64_t Store::create_campaign(const CampaignRow& c) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT INTO campaigns(state, workload, size, trainer, manifest_json, options_json, note) "
        "VALUES('running', ?, ?, ?, ?, ?, ?)");
    st.bind(1, c.workload);
    st.bind(2, c.size);
    st.bind(3, c.trainer);
    st.bind(4, c.manifest.dump());
    st.bind(5, c.options.dump());
    st.bind(6, c.note);
    st.exec();
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::optional<CampaignRow> Store::campaign(std::int64_t id) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM campaigns WHERE id = ?", kCampaignColumns));
  q.bind(1, id);
  if (!q.executeStep()) return std::nullopt;
  return campaign_from(q);
}

std::optional<CampaignRow> Store::latest_campaign(bool unfinished_only, const std::string& workload,
                                                  const std::string& size) {
  std::string sql = fmt::format("SELECT {} FROM campaigns WHERE 1=1", kCampaignColumns);
  if (unfinished_only) sql += " AND state = 'running'";
  if (!workload.empty()) sql += " AND workload = :w";
  if (!size.empty()) sql += " AND size = :s";
  sql += " ORDER BY id DESC LIMIT 1";
  SQLite::Statement q(*db_, sql);
  if (!workload.empty()) q.bind(":w", workload);
  if (!size.empty()) q.bind(":s", size);
  if (!q.executeStep()) return std::nullopt;
  return campaign_from(q);
}

void Store::set_campaign_environment(std::int64_t id, std::int64_t env_id) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE campaigns SET environment_id = ? WHERE id = ?");
    st.bind(1, env_id);
    st.bind(2, id);
    st.exec();
  });
}

void Store::set_campaign_determinism(std::int64_t id, bool deterministic, const std::string& note) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE campaigns SET deterministic = ?, note = ? WHERE id = ?");
    st.bind(1, deterministic ? 1 : 0);
    st.bind(2, note);
    st.bind(3, id);
    st.exec();
  });
}

void Store::finish_campaign(std::int64_t id) {
  write([&] {
    SQLite::Statement st(*db_,
        "UPDATE campaigns SET state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?");
    st.bind(1, id);
    st.exec();
  });
}

void Store::reopen_campaign(std::int64_t id) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE campaigns SET state = 'running', finished_at = NULL WHERE id = ?");
    st.bind(1, id);
    st.exec();
  });
}

std::optional<TrialRow> Store::find_trial(std::int64_t campaign_id, const std::string& key) {
  SQLite::Statement q(*db_, fmt::format(
      "SELECT {} FROM trials WHERE campaign_id = ? AND trial_key = ? ORDER BY id DESC LIMIT 1", kTrialColumns));
  q.bind(1, campaign_id);
  q.bind(2, key);
  if (!q.executeStep()) return std::nullopt;
  return trial_from(q);
}

std::int64_t Store::claim_trial(const TrialRow& t) {
  std::int64_t id = 0;
  write([&] {
    // A queued row (re-queued after a stale run) or this controller's own reservation
    // (shared_claims.hpp: a running row it has not started yet).
    SQLite::Statement q(*db_,
        "SELECT id FROM trials WHERE campaign_id = ? AND trial_key = ? AND (state = 'queued' OR "
        "(state = 'running' AND started_at IS NULL AND host = ? AND controller_pid = ?)) ORDER BY id LIMIT 1");
    q.bind(1, t.campaign_id);
    q.bind(2, t.trial_key);
    q.bind(3, host_name());
    q.bind(4, static_cast<int>(::getpid()));
    if (q.executeStep()) {
      id = q.getColumn(0).getInt64();
    } else {
      SQLite::Statement ins(*db_, "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, "
                                  "seed, steps, micro_batch, grad_accum, repeat, state) VALUES(?,?,'',?,'{}',0,0,1,1,0,'queued')");
      ins.bind(1, t.campaign_id);
      ins.bind(2, t.trial_key);
      ins.bind(3, t.config_key);
      ins.exec();
      id = db_->getLastInsertRowid();
    }
    // The row describes what runs now (a reservation was inserted knowing only the key).
    SQLite::Statement up(*db_,
        "UPDATE trials SET purpose = ?, config_key = ?, config_json = ?, seed = ?, steps = ?, micro_batch = ?, "
        "grad_accum = ?, repeat = ?, state = 'running', started_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), "
        "host = ?, controller_pid = ?, heartbeat_at = ? WHERE id = ?");
    int i = 1;
    up.bind(i++, t.purpose);
    up.bind(i++, t.config_key);
    up.bind(i++, t.config_json);
    up.bind(i++, t.seed);
    up.bind(i++, t.steps);
    up.bind(i++, t.micro_batch);
    up.bind(i++, t.grad_accum);
    up.bind(i++, t.repeat);
    up.bind(i++, host_name());
    up.bind(i++, static_cast<int>(::getpid()));
    bind_real(up, i++, unix_now());
    up.bind(i++, id);
    up.exec();
  });
  return id;
}

void Store::finish_trial(std::int64_t id, const TrialFinish& f) {
  write([&] {
    SQLite::Statement st(*db_,
        "UPDATE trials SET state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), "
        "disposition = ?, run_ok = ?, reason = ?, wall_s = ?, exit_code = ?, signal = ?, "
        "samples_per_s = ?, tokens_per_s = ?, peak_allocated_bytes = ?, peak_reserved_bytes = ?, "
        "breakdown_json = ?, param_digest = ?, optimizer_digest = ?, eval_loss = ?, eval_loss_bits = ?, "
        "environment_id = ?, trial_dir = ?, stdout_log = ?, stderr_log = ?, result_path = ?, result_json = ?, "
        "heartbeat_at = ? WHERE id = ?");
    int i = 1;
    if (f.disposition) st.bind(i++, std::string(to_string(*f.disposition)));
    else st.bind(i++);
    st.bind(i++, f.run_ok ? 1 : 0);
    st.bind(i++, f.reason);
    bind_real(st, i++, f.wall_s);
    if (f.exit_code) st.bind(i++, *f.exit_code); else st.bind(i++);
    if (f.signal) st.bind(i++, *f.signal); else st.bind(i++);
    bind_real(st, i++, f.samples_per_s);
    bind_real(st, i++, f.tokens_per_s);
    bind_real(st, i++, f.peak_allocated);
    bind_real(st, i++, f.peak_reserved);
    st.bind(i++, f.breakdown.is_null() ? std::string("{}") : f.breakdown.dump());
    st.bind(i++, f.param_digest);
    st.bind(i++, f.optimizer_digest);
    bind_real(st, i++, f.eval_loss);
    st.bind(i++, f.eval_loss_bits);
    if (f.environment_id) st.bind(i++, *f.environment_id); else st.bind(i++);
    st.bind(i++, f.trial_dir);
    st.bind(i++, f.stdout_log);
    st.bind(i++, f.stderr_log);
    st.bind(i++, f.result_path);
    st.bind(i++, f.result_json);
    bind_real(st, i++, unix_now());
    st.bind(i++, id);
    st.exec();
    SQLite::Statement step(*db_,
        "INSERT OR REPLACE INTO steps(trial_id, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds) "
        "VALUES(?,?,?,?,?,?,?)");
    for (const auto& s : f.steps) {
      step.reset();
      step.bind(1, id);
      step.bind(2, s.step);
      bind_real(step, 3, s.loss);
      step.bind(4, s.loss_bits);
      bind_real(step, 5, s.grad_norm);
      step.bind(6, s.grad_norm_bits);
      bind_real(step, 7, s.seconds);
      step.exec();
    }
  });
}

void Store::set_trial_disposition(const std::vector<std::int64_t>& ids, Disposition d) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE trials SET disposition = ? WHERE id = ? AND run_ok = 1");
    for (auto id : ids) {
      st.reset();
      st.bind(1, std::string(to_string(d)));
      st.bind(2, id);
      st.exec();
    }
  });
}

void Store::heartbeat(std::int64_t trial_id, const std::string& trainer_heartbeat_json) {
  write([&] {
    double now = unix_now();
    SQLite::Statement st(*db_, "UPDATE trials SET heartbeat_at = ? WHERE id = ? AND state = 'running'");
    bind_real(st, 1, now);
    st.bind(2, trial_id);
    st.exec();
    json hb = json::parse(trainer_heartbeat_json, nullptr, false);
    SQLite::Statement h(*db_, "INSERT OR REPLACE INTO heartbeats(trial_id, pid, step, time, updated_at) VALUES(?,?,?,?,?)");
    h.bind(1, trial_id);
    if (hb.is_object() && hb.contains("pid") && hb["pid"].is_number_integer()) h.bind(2, hb["pid"].get<int>()); else h.bind(2);
    if (hb.is_object() && hb.contains("step") && hb["step"].is_number_integer()) h.bind(3, hb["step"].get<int>()); else h.bind(3);
    if (hb.is_object() && hb.contains("time") && hb["time"].is_number()) bind_real(h, 4, hb["time"].get<double>()); else h.bind(4);
    bind_real(h, 5, now);
    h.exec();
  });
}

void Store::set_trial_pgid(std::int64_t trial_id, int pgid) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE trials SET pgid = ? WHERE id = ?");
    st.bind(1, pgid);
    st.bind(2, trial_id);
    st.exec();
  });
}

std::vector<TrialRow> Store::trials(std::int64_t campaign_id) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM trials WHERE campaign_id = ? ORDER BY id", kTrialColumns));
  q.bind(1, campaign_id);
  std::vector<TrialRow> out;
  while (q.executeStep()) out.push_back(trial_from(q));
  return out;
}

std::vector<std::int64_t> Store::mark_stale_and_requeue(std::int64_t campaign_id, double stale_after_s) {
  std::vector<std::int64_t> marked;
  const std::string host = host_name();
  const double now = unix_now();
  std::string trainer;
  if (auto c = campaign(campaign_id)) trainer = c->trainer;
  std::set<int> dead_controllers;
  write([&] {
    SQLite::Statement q(*db_, fmt::format("SELECT {}, started_at IS NULL FROM trials WHERE campaign_id = ? AND state = 'running'",
                                          kTrialColumns));
    q.bind(1, campaign_id);
    std::vector<std::pair<TrialRow, bool>> running;
    while (q.executeStep()) {
      TrialRow t = trial_from(q);
      running.emplace_back(std::move(t), q.getColumn(q.getColumnCount() - 1).getInt() != 0);
    }
    for (const auto& [t, reserved_only] : running) {
      bool same_host = t.host == host;
      bool controller_dead = same_host && t.controller_pid != ::getpid() && !(::kill(t.controller_pid, 0) == 0 || errno == EPERM);
      bool silent = now - t.heartbeat_at > stale_after_s;
      if (!controller_dead && !silent) continue;
      if (controller_dead) dead_controllers.insert(t.controller_pid);
      if (reserved_only) {
        // A key reserved by a controller that never started it: back to the queue.
        SQLite::Statement back(*db_, "UPDATE trials SET state = 'queued', host = NULL, controller_pid = NULL "
                                     "WHERE id = ? AND state = 'running' AND started_at IS NULL");
        back.bind(1, t.id);
        back.exec();
        continue;
      }
      // Exactly once: only the transaction that flips running -> finished re-queues.
      SQLite::Statement up(*db_,
          "UPDATE trials SET state = 'finished', disposition = 'stale', run_ok = 0, "
          "reason = 'controller died mid-trial; re-queued', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
          "WHERE id = ? AND state = 'running'");
      up.bind(1, t.id);
      if (up.exec() != 1) continue;
      requeue_copy(t.id);
      if (same_host && group_runs(t.pgid, trainer)) ::kill(-t.pgid, SIGKILL);
      marked.push_back(t.id);
    }
    // Trials an interrupted controller ended and recorded `killed` run again.
    SQLite::Statement k(*db_,
        "SELECT t.id FROM trials t WHERE t.campaign_id = ? AND t.state = 'finished' AND t.disposition = 'killed' "
        "AND substr(t.reason, 1, ?) = ? AND NOT EXISTS (SELECT 1 FROM trials n WHERE n.campaign_id = t.campaign_id "
        "AND n.trial_key = t.trial_key AND n.id > t.id)");
    k.bind(1, campaign_id);
    k.bind(2, static_cast<int>(std::strlen(kInterruptedReason)));
    k.bind(3, std::string(kInterruptedReason));
    std::vector<std::int64_t> killed;
    while (k.executeStep()) killed.push_back(k.getColumn(0).getInt64());
    for (auto id : killed) requeue_copy(id);
  });
  // What a dead controller's trials left on this host: its ranks died with it
  // (PR_SET_PDEATHSIG); their descendants carry its supervisor token.
  for (int pid : dead_controllers) {
    for (int p : find_processes(0, fmt::format("{}={}:", kSupervisorVariable, pid), true, {})) ::kill(p, SIGKILL);
  }
  return marked;
}

void Store::requeue_copy(std::int64_t trial_id) {
  SQLite::Statement ins(*db_,
      "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, steps, "
      "micro_batch, grad_accum, repeat, state, requeued_from) "
      "SELECT campaign_id, trial_key, purpose, config_key, config_json, seed, steps, micro_batch, "
      "grad_accum, repeat, 'queued', id FROM trials WHERE id = ?");
  ins.bind(1, trial_id);
  ins.exec();
}

void Store::add_baseline(std::int64_t campaign_id, int steps, const std::string& role, int seed, std::int64_t trial_id) {
  write([&] {
    SQLite::Statement st(*db_, "INSERT OR REPLACE INTO baselines(campaign_id, steps, role, seed, trial_id) VALUES(?,?,?,?,?)");
    st.bind(1, campaign_id);
    st.bind(2, steps);
    st.bind(3, role);
    st.bind(4, seed);
    st.bind(5, trial_id);
    st.exec();
  });
}

std::int64_t Store::add_evaluation(const EvaluationRow& e) {
  std::int64_t id = 0;
  write([&] {
    // One row per (campaign, config, steps): a resumed campaign re-derives the same
    // verdict from its stored trials and updates the row in place (presets and
    // kernel_trials may reference it) instead of duplicating it.
    SQLite::Statement old(*db_, "SELECT id FROM evaluations WHERE campaign_id = ? AND config_key = ? AND steps = ?");
    old.bind(1, e.campaign_id);
    old.bind(2, e.config_key);
    old.bind(3, e.steps);
    if (old.executeStep()) id = old.getColumn(0).getInt64();
    old.reset();
    SQLite::Statement st(*db_, id ?
        "UPDATE evaluations SET campaign_id = ?, strategy = ?, config_key = ?, config_json = ?, steps = ?, "
        "disposition = ?, gate_class = ?, reason = ?, speedup = ?, speedup_spread = ?, samples_per_s = ?, "
        "projected_peak_bytes = ?, trial_ids_json = ?, speedup_lo = ?, speedup_hi = ?, pairs = ? WHERE id = ?" :
        "INSERT INTO evaluations(campaign_id, strategy, config_key, config_json, steps, disposition, gate_class, "
        "reason, speedup, speedup_spread, samples_per_s, projected_peak_bytes, trial_ids_json, speedup_lo, "
        "speedup_hi, pairs) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, e.campaign_id);
    st.bind(2, e.strategy);
    st.bind(3, e.config_key);
    st.bind(4, json(config_from_key(e.config_key)).dump());
    st.bind(5, e.steps);
    st.bind(6, std::string(to_string(e.disposition)));
    st.bind(7, e.gate_class);
    st.bind(8, e.reason);
    bind_real(st, 9, e.speedup);
    bind_real(st, 10, e.speedup_spread);
    bind_real(st, 11, e.samples_per_s);
    bind_real(st, 12, e.projected_peak_bytes);
    st.bind(13, ids_json(e.trial_ids));
    bind_real(st, 14, e.speedup_lo);
    bind_real(st, 15, e.speedup_hi);
    st.bind(16, e.pairs);
    if (id) st.bind(17, id);
    st.exec();
    if (!id) id = db_->getLastInsertRowid();
  });
  return id;
}

std::vector<EvaluationRow> Store::evaluations(std::int64_t campaign_id) {
  SQLite::Statement q(*db_,
      std::string("SELECT id, campaign_id, strategy, config_key, steps, disposition, gate_class, reason, speedup, "
                  "speedup_spread, samples_per_s, projected_peak_bytes, trial_ids_json, on_frontier, ") +
          // A read-only open of a database older than version 6 has no interval columns.
          (schema_version() >= 6 ? "speedup_lo, speedup_hi, pairs" : "NULL, NULL, 0") +
          " FROM evaluations WHERE campaign_id = ? ORDER BY id");
  q.bind(1, campaign_id);
  std::vector<EvaluationRow> out;
  while (q.executeStep()) {
    EvaluationRow e;
    e.id = q.getColumn(0).getInt64();
    e.campaign_id = q.getColumn(1).getInt64();
    e.strategy = text(q.getColumn(2));
    e.config_key = text(q.getColumn(3));
    e.steps = q.getColumn(4).getInt();
    e.disposition = disposition_from_string(text(q.getColumn(5))).value_or(Disposition::crash);
    e.gate_class = text(q.getColumn(6));
    e.reason = text(q.getColumn(7));
    e.speedup = column_real(q.getColumn(8));
    e.speedup_spread = column_real(q.getColumn(9));
    e.samples_per_s = column_real(q.getColumn(10));
    e.projected_peak_bytes = column_real(q.getColumn(11));
    e.trial_ids = ids_from(text(q.getColumn(12)));
    e.on_frontier = q.getColumn(13).getInt() != 0;
    e.speedup_lo = column_real_or_nan(q.getColumn(14));
    e.speedup_hi = column_real_or_nan(q.getColumn(15));
    e.pairs = q.getColumn(16).getInt();
    out.push_back(std::move(e));
  }
  return out;
}

void Store::set_frontier(std::int64_t campaign_id, const std::vector<std::int64_t>& evaluation_ids) {
  write([&] {
    SQLite::Statement clr(*db_, "UPDATE evaluations SET on_frontier = 0 WHERE campaign_id = ?");
    clr.bind(1, campaign_id);
    clr.exec();
    SQLite::Statement st(*db_, "UPDATE evaluations SET on_frontier = 1 WHERE id = ?");
    for (auto id : evaluation_ids) {
      st.reset();
      st.bind(1, id);
      st.exec();
    }
  });
}

void Store::add_projection(const ProjectionRow& p) {
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT INTO projections(campaign_id, config_key, target_micro_batch, world_size, zero_stage, "
        "inputs_json, projected_bytes, measured_bytes, relative_error) VALUES(?,?,?,?,?,?,?,?,?)");
    st.bind(1, p.campaign_id);
    st.bind(2, p.config_key);
    st.bind(3, p.target_micro_batch);
    st.bind(4, p.world_size);
    st.bind(5, p.zero_stage);
    st.bind(6, p.inputs.dump());
    bind_real(st, 7, p.projected_bytes);
    bind_real(st, 8, p.measured_bytes);
    bind_real(st, 9, p.relative_error);
    st.exec();
  });
}

void Store::add_kernel_trial(std::int64_t campaign_id, const std::string& family, const json& params,
                             std::int64_t evaluation_id) {
  write([&] {
    // Idempotent: a resumed campaign re-records the same evaluation.
    SQLite::Statement st(*db_,
        "INSERT INTO kernel_trials(campaign_id, family, params_json, evaluation_id) SELECT ?1, ?2, ?3, ?4 "
        "WHERE NOT EXISTS (SELECT 1 FROM kernel_trials WHERE evaluation_id = ?4 AND family = ?2)");
    st.bind(1, campaign_id);
    st.bind(2, family);
    st.bind(3, params.dump());
    st.bind(4, evaluation_id);
    st.exec();
  });
}

void Store::add_kernel_timings(const std::vector<KernelTimingRow>& rows) {
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT OR IGNORE INTO kernel_timings(campaign_id, trial_id, family, params, micro_batch, fwd_us, fwdbwd_us, "
        "matches_plain) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& r : rows) {
      st.reset();
      st.bind(1, r.campaign_id);
      st.bind(2, r.trial_id);
      st.bind(3, r.family);
      st.bind(4, r.params);
      st.bind(5, r.micro_batch);
      bind_real(st, 6, r.fwd_us);
      bind_real(st, 7, r.fwdbwd_us);
      st.bind(8, r.matches_plain ? 1 : 0);
      st.exec();
    }
  });
}

std::vector<KernelTimingRow> Store::kernel_timings(std::int64_t campaign_id, const std::string& family) {
  SQLite::Statement st(*db_,
      "SELECT id, campaign_id, trial_id, family, params, micro_batch, fwd_us, fwdbwd_us, matches_plain "
      "FROM kernel_timings WHERE campaign_id = ?1 AND (?2 = '' OR family = ?2) ORDER BY id");
  st.bind(1, campaign_id);
  st.bind(2, family);
  std::vector<KernelTimingRow> out;
  while (st.executeStep()) {
    KernelTimingRow r;
    r.id = st.getColumn(0).getInt64();
    r.campaign_id = st.getColumn(1).getInt64();
    r.trial_id = st.getColumn(2).getInt64();
    r.family = st.getColumn(3).getString();
    r.params = st.getColumn(4).getString();
    r.micro_batch = st.getColumn(5).getInt();
    r.fwd_us = column_real(st.getColumn(6));
    r.fwdbwd_us = column_real(st.getColumn(7));
    r.matches_plain = st.getColumn(8).getInt() != 0;
    out.push_back(std::move(r));
  }
  return out;
}

void Store::set_target_finals(std::int64_t campaign_id, const std::vector<TargetFinalRow>& rows) {
  write([&] {
    SQLite::Statement clear(*db_, "DELETE FROM target_finals WHERE campaign_id = ?");
    clear.bind(1, campaign_id);
    clear.exec();
    SQLite::Statement st(*db_,
        "INSERT INTO target_finals(campaign_id, budget_name, budget_bytes, evaluation_id, config_key, "
        "micro_batch, steps, rounds, disposition, reason, speedup, speedup_spread, samples_per_s, "
        "baseline_samples_per_s, trial_ids_json, speedup_lo, speedup_hi) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const auto& r : rows) {
      st.reset();
      st.bind(1, campaign_id);
      st.bind(2, r.budget_name);
      bind_real(st, 3, r.budget_bytes);
      st.bind(4, r.evaluation_id);
      st.bind(5, r.config_key);
      st.bind(6, r.micro_batch);
      st.bind(7, r.steps);
      st.bind(8, r.rounds);
      st.bind(9, std::string(to_string(r.disposition)));
      st.bind(10, r.reason);
      bind_real(st, 11, r.speedup);
      bind_real(st, 12, r.speedup_spread);
      bind_real(st, 13, r.samples_per_s);
      bind_real(st, 14, r.baseline_samples_per_s);
      st.bind(15, ids_json(r.trial_ids));
      bind_real(st, 16, r.speedup_lo);
      bind_real(st, 17, r.speedup_hi);
      st.exec();
    }
  });
}

std::vector<TargetFinalRow> Store::target_finals(std::int64_t campaign_id) {
  if (schema_version() < 5) return {};  // a read-only open of an older database: no finals table
  SQLite::Statement q(*db_,
      std::string("SELECT id, campaign_id, budget_name, budget_bytes, evaluation_id, config_key, micro_batch, "
                  "steps, rounds, ") + "disposition, reason, speedup, speedup_spread, samples_per_s, baseline_samples_per_s, trial_ids_json, " +
          std::string(schema_version() >= 6 ? "speedup_lo, speedup_hi" : "NULL, NULL") +
          " FROM target_finals WHERE campaign_id = ? ORDER BY id");
  q.bind(1, campaign_id);
  std::vector<TargetFinalRow> out;
  while (q.executeStep()) {
    TargetFinalRow r;
    r.id = q.getColumn(0).getInt64();
    r.campaign_id = q.getColumn(1).getInt64();
    r.budget_name = text(q.getColumn(2));
    r.budget_bytes = column_real(q.getColumn(3));
    r.evaluation_id = q.getColumn(4).getInt64();
    r.config_key = text(q.getColumn(5));
    r.micro_batch = q.getColumn(6).getInt();
    r.steps = q.getColumn(7).getInt();
    r.rounds = q.getColumn(8).getInt();
    r.disposition = disposition_from_string(text(q.getColumn(9))).value_or(Disposition::crash);
    r.reason = text(q.getColumn(10));
    r.speedup = column_real(q.getColumn(11));
    r.speedup_spread = column_real(q.getColumn(12));
    r.samples_per_s = column_real(q.getColumn(13));
    r.baseline_samples_per_s = column_real(q.getColumn(14));
    r.trial_ids = ids_from(text(q.getColumn(15)));
    r.speedup_lo = column_real_or_nan(q.getColumn(16));
    r.speedup_hi = column_real_or_nan(q.getColumn(17));
    out.push_back(std::move(r));
  }
  return out;
}

std::int64_t Store::add_preset(const PresetRow& p) {
  std::int64_t id = 0;
  write([&] {
    SQLite::Statement st(*db_,
        "INSERT INTO presets(campaign_id, name, budget_bytes, path, config_key, evaluation_id, trial_ids_json, "
        "speedup, speedup_spread, projected_peak_bytes, fingerprint_hash, content) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, p.campaign_id);
    st.bind(2, p.name);
    bind_real(st, 3, p.budget_bytes);
    st.bind(4, p.path);
    st.bind(5, p.config_key);
    if (p.evaluation_id) st.bind(6, *p.evaluation_id); else st.bind(6);
    st.bind(7, ids_json(p.trial_ids));
    bind_real(st, 8, p.speedup);
    bind_real(st, 9, p.speedup_spread);
    bind_real(st, 10, p.projected_peak_bytes);
    st.bind(11, p.fingerprint_hash);
    st.bind(12, p.content);
    st.exec();
    id = db_->getLastInsertRowid();
  });
  return id;
}

std::vector<ProjectionRow> Store::projections(std::int64_t campaign_id, const std::string& config_key) {
  SQLite::Statement q(*db_,
      "SELECT campaign_id, config_key, target_micro_batch, world_size, zero_stage, inputs_json, projected_bytes, "
      "measured_bytes, relative_error FROM projections WHERE campaign_id = ? AND config_key = ? ORDER BY id");
  q.bind(1, campaign_id);
  q.bind(2, config_key);
  std::vector<ProjectionRow> out;
  while (q.executeStep()) {
    ProjectionRow p;
    p.campaign_id = q.getColumn(0).getInt64();
    p.config_key = text(q.getColumn(1));
    p.target_micro_batch = q.getColumn(2).getInt();
    p.world_size = q.getColumn(3).getInt();
    p.zero_stage = q.getColumn(4).getInt();
    p.inputs = json::parse(text(q.getColumn(5)), nullptr, /*allow_exceptions=*/false);
    p.projected_bytes = column_real(q.getColumn(6));
    if (!q.getColumn(7).isNull()) p.measured_bytes = column_real(q.getColumn(7));
    if (!q.getColumn(8).isNull()) p.relative_error = column_real(q.getColumn(8));
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<PresetRow> Store::latest_preset(std::int64_t campaign_id, const std::string& name) {
  SQLite::Statement q(*db_,
      "SELECT campaign_id, name, path, config_key, budget_bytes, speedup, speedup_spread, projected_peak_bytes "
      "FROM presets WHERE campaign_id = ? AND name = ? ORDER BY id DESC LIMIT 1");
  q.bind(1, campaign_id);
  q.bind(2, name);
  if (!q.executeStep()) return std::nullopt;
  PresetRow p;
  p.campaign_id = q.getColumn(0).getInt64();
  p.name = text(q.getColumn(1));
  p.path = text(q.getColumn(2));
  p.config_key = text(q.getColumn(3));
  p.budget_bytes = column_real(q.getColumn(4));
  p.speedup = column_real(q.getColumn(5));
  p.speedup_spread = column_real(q.getColumn(6));
  p.projected_peak_bytes = column_real(q.getColumn(7));
  return p;
}

}  // namespace sg::agent
