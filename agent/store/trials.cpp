// The trials table (and its steps and heartbeats): claiming, finishing and reading runs.
#include "agent/store/trials.hpp"

#include <unistd.h>

#include "agent/store/row_maps.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

const RowMap<TrialRow>& trial_map() {
  static const RowMap<TrialRow> map{
      SG_COLUMNS(TrialRow, id, campaign_id, trial_key, purpose, config_key, seed, steps,
                 micro_batch, grad_accum, repeat, state, disposition, run_ok, reason, wall_s,
                 samples_per_s, peak_allocated_bytes, exit_code, signal, param_digest,
                 optimizer_digest, stdout_log, stderr_log, result_path, result_json, eval_loss,
                 host, controller_pid, pgid, heartbeat_at, requeued_from)};
  return map;
}

namespace {

// The row a claim takes: a queued one (re-queued after a stale run), this controller's
// own reservation (shared_claims.hpp: a running row it has not started yet), or a new
// queued row. REQUIRES: inside write().
std::int64_t claimable_row(SQLite::Database& db, const TrialRow& t) {
  const auto row =
      query_one(db,
                "SELECT id FROM trials WHERE campaign_id = ? AND trial_key = ? AND "
                "(state = 'queued' OR (state = 'running' AND started_at IS NULL AND "
                "host = ? AND controller_pid = ?)) ORDER BY id LIMIT 1",
                first_int64, t.campaign_id, t.trial_key, host_name(), static_cast<int>(::getpid()));
  if (row) return *row;
  exec(db,
       "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, config_json, seed, steps, "
       "micro_batch, grad_accum, repeat, state) VALUES(?,?,'',?,'{}',0,0,1,1,0,'queued')",
       t.campaign_id, t.trial_key, t.config_key);
  return db.getLastInsertRowid();
}

void insert_steps(SQLite::Database& db, std::int64_t id, const TrialFinish& f) {
  SQLite::Statement step(db,
                         "INSERT OR REPLACE INTO steps(trial_id, step, loss, loss_bits, "
                         "grad_norm, grad_norm_bits, seconds) VALUES(?,?,?,?,?,?,?)");
  for (const auto& s : f.steps) {
    exec_again(step, id, s.step, s.loss, s.loss_bits, s.grad_norm, s.grad_norm_bits, s.seconds);
  }
}

// The integer `key` of a trainer heartbeat object, or nullopt.
std::optional<int> heartbeat_int(const nlohmann::json& hb, const char* key) {
  if (hb.is_object() && hb.contains(key) && hb[key].is_number_integer()) return hb[key].get<int>();
  return std::nullopt;
}

}  // namespace

std::optional<TrialRow> Store::find_trial(std::int64_t campaign_id, const std::string& key) {
  return trial_map().select_one(
      *db_, "FROM trials WHERE campaign_id = ? AND trial_key = ? ORDER BY id DESC LIMIT 1",
      campaign_id, key);
}

std::int64_t Store::claim_trial(const TrialRow& t) {
  std::int64_t id = 0;
  write([&] {
    id = claimable_row(*db_, t);
    // The row describes what runs now (a reservation was inserted knowing only the key).
    exec(*db_,
         "UPDATE trials SET purpose = ?, config_key = ?, config_json = ?, seed = ?, steps = ?, "
         "micro_batch = ?, grad_accum = ?, repeat = ?, state = 'running', started_at = "
         "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), host = ?, controller_pid = ?, heartbeat_at = ? "
         "WHERE id = ?",
         t.purpose, t.config_key, t.config_json, t.seed, t.steps, t.micro_batch, t.grad_accum,
         t.repeat, host_name(), static_cast<int>(::getpid()), unix_now(), id);
  });
  return id;
}

void Store::finish_trial(std::int64_t id, const TrialFinish& f) {
  write([&] {
    exec(*db_,
         "UPDATE trials SET state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', "
         "'now'), disposition = ?, run_ok = ?, reason = ?, wall_s = ?, exit_code = ?, signal = ?, "
         "samples_per_s = ?, tokens_per_s = ?, peak_allocated_bytes = ?, peak_reserved_bytes = ?, "
         "breakdown_json = ?, param_digest = ?, optimizer_digest = ?, eval_loss = ?, "
         "eval_loss_bits = ?, environment_id = ?, trial_dir = ?, stdout_log = ?, stderr_log = ?, "
         "result_path = ?, result_json = ?, heartbeat_at = ? WHERE id = ?",
         f.disposition, f.run_ok, f.reason, f.wall_s, f.exit_code, f.signal, f.samples_per_s,
         f.tokens_per_s, f.peak_allocated, f.peak_reserved,
         f.breakdown.is_null() ? std::string("{}") : f.breakdown.dump(), f.param_digest,
         f.optimizer_digest, f.eval_loss, f.eval_loss_bits, f.environment_id, f.trial_dir,
         f.stdout_log, f.stderr_log, f.result_path, f.result_json, unix_now(), id);
    insert_steps(*db_, id, f);
  });
}

void Store::set_trial_disposition(const std::vector<std::int64_t>& ids, Disposition d) {
  write([&] {
    SQLite::Statement st(*db_, "UPDATE trials SET disposition = ? WHERE id = ? AND run_ok = 1");
    for (auto id : ids) exec_again(st, d, id);
  });
}

void Store::heartbeat(std::int64_t trial_id, const std::string& trainer_heartbeat_json) {
  write([&] {
    const double now = unix_now();
    exec(*db_, "UPDATE trials SET heartbeat_at = ? WHERE id = ? AND state = 'running'", now,
         trial_id);
    const auto hb = nlohmann::json::parse(trainer_heartbeat_json, nullptr, false);
    const bool has_time = hb.is_object() && hb.contains("time") && hb["time"].is_number();
    exec(*db_,
         "INSERT OR REPLACE INTO heartbeats(trial_id, pid, step, time, updated_at) "
         "VALUES(?,?,?,?,?)",
         trial_id, heartbeat_int(hb, "pid"), heartbeat_int(hb, "step"),
         has_time ? std::optional<double>(hb["time"].get<double>()) : std::nullopt, now);
  });
}

void Store::set_trial_pgid(std::int64_t trial_id, int pgid) {
  write_exec(*this, "UPDATE trials SET pgid = ? WHERE id = ?", pgid, trial_id);
}

std::vector<TrialRow> Store::trials(std::int64_t campaign_id) {
  return trial_map().select_all(*db_, "FROM trials WHERE campaign_id = ? ORDER BY id", campaign_id);
}

}  // namespace sg::agent
