// The trials table (and its steps and heartbeats): claiming, finishing and reading runs.
#include "agent/store/trials.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "agent/store/row_maps.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

const RowMap<TrialRow>& trial_map() {
  static const RowMap<TrialRow> map{
      col("id", &TrialRow::id),
      col("campaign_id", &TrialRow::campaign_id),
      col("trial_key", &TrialRow::trial_key),
      col("purpose", &TrialRow::purpose),
      col("config_key", &TrialRow::config_key),
      col("seed", &TrialRow::seed),
      col("steps", &TrialRow::steps),
      col("micro_batch", &TrialRow::micro_batch),
      col("grad_accum", &TrialRow::grad_accum),
      col("repeat", &TrialRow::repeat),
      col("state", &TrialRow::state),
      col("disposition", &TrialRow::disposition),
      col("run_ok", &TrialRow::run_ok),
      col("reason", &TrialRow::reason),
      col("wall_s", &TrialRow::wall_s),
      col("samples_per_s", &TrialRow::samples_per_s),
      col("peak_allocated_bytes", &TrialRow::peak_allocated_bytes),
      col("exit_code", &TrialRow::exit_code),
      col("signal", &TrialRow::signal),
      col("param_digest", &TrialRow::param_digest),
      col("optimizer_digest", &TrialRow::optimizer_digest),
      col("stdout_log", &TrialRow::stdout_log),
      col("stderr_log", &TrialRow::stderr_log),
      col("result_path", &TrialRow::result_path),
      col("result_json", &TrialRow::result_json),
      col("eval_loss", &TrialRow::eval_loss),
      col("host", &TrialRow::host),
      col("controller_pid", &TrialRow::controller_pid),
      col("pgid", &TrialRow::pgid),
      col("heartbeat_at", &TrialRow::heartbeat_at),
      col("requeued_from", &TrialRow::requeued_from),
  };
  return map;
}

namespace {

// The row a claim takes: a queued one (re-queued after a stale run), this controller's
// own reservation (shared_claims.hpp: a running row it has not started yet), or a new
// queued row. REQUIRES: inside write().
std::int64_t claimable_row(SQLite::Database& db, const TrialRow& t) {
  SQLite::Statement q(db,
                      "SELECT id FROM trials WHERE campaign_id = ? AND trial_key = ? AND "
                      "(state = 'queued' OR (state = 'running' AND started_at IS NULL AND "
                      "host = ? AND controller_pid = ?)) ORDER BY id LIMIT 1");
  q.bind(1, t.campaign_id);
  q.bind(2, t.trial_key);
  q.bind(3, host_name());
  q.bind(4, static_cast<int>(::getpid()));
  if (q.executeStep()) return q.getColumn(0).getInt64();
  SQLite::Statement ins(db,
                        "INSERT INTO trials(campaign_id, trial_key, purpose, config_key, "
                        "config_json, seed, steps, micro_batch, grad_accum, repeat, state) "
                        "VALUES(?,?,'',?,'{}',0,0,1,1,0,'queued')");
  ins.bind(1, t.campaign_id);
  ins.bind(2, t.trial_key);
  ins.bind(3, t.config_key);
  ins.exec();
  return db.getLastInsertRowid();
}

void insert_steps(SQLite::Database& db, std::int64_t id, const TrialFinish& f) {
  SQLite::Statement step(db,
                         "INSERT OR REPLACE INTO steps(trial_id, step, loss, loss_bits, "
                         "grad_norm, grad_norm_bits, seconds) VALUES(?,?,?,?,?,?,?)");
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
}

// The integer `key` of a trainer heartbeat object, or NULL.
void bind_heartbeat_int(SQLite::Statement& st, int index, const nlohmann::json& hb,
                        const char* key) {
  if (hb.is_object() && hb.contains(key) && hb[key].is_number_integer()) {
    st.bind(index, hb[key].get<int>());
  } else {
    st.bind(index);
  }
}

}  // namespace

std::optional<TrialRow> Store::find_trial(std::int64_t campaign_id, const std::string& key) {
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM trials WHERE campaign_id = ? AND "
                                        "trial_key = ? ORDER BY id DESC LIMIT 1",
                                        trial_map().select_list()));
  q.bind(1, campaign_id);
  q.bind(2, key);
  if (!q.executeStep()) return std::nullopt;
  return trial_map().read(q);
}

std::int64_t Store::claim_trial(const TrialRow& t) {
  std::int64_t id = 0;
  write([&] {
    id = claimable_row(*db_, t);
    // The row describes what runs now (a reservation was inserted knowing only the key).
    SQLite::Statement up(*db_,
                         "UPDATE trials SET purpose = ?, config_key = ?, config_json = ?, "
                         "seed = ?, steps = ?, micro_batch = ?, grad_accum = ?, repeat = ?, "
                         "state = 'running', started_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), "
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
    SQLite::Statement st(
        *db_,
        "UPDATE trials SET state = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', "
        "'now'), "
        "disposition = ?, run_ok = ?, reason = ?, wall_s = ?, exit_code = ?, signal = ?, "
        "samples_per_s = ?, tokens_per_s = ?, peak_allocated_bytes = ?, peak_reserved_bytes = ?, "
        "breakdown_json = ?, param_digest = ?, optimizer_digest = ?, eval_loss = ?, "
        "eval_loss_bits = ?, environment_id = ?, trial_dir = ?, stdout_log = ?, stderr_log = ?, "
        "result_path = ?, result_json = ?, heartbeat_at = ? WHERE id = ?");
    int i = 1;
    if (f.disposition) {
      st.bind(i++, std::string(to_string(*f.disposition)));
    } else {
      st.bind(i++);
    }
    st.bind(i++, f.run_ok ? 1 : 0);
    st.bind(i++, f.reason);
    bind_real(st, i++, f.wall_s);
    bind_optional(st, i++, f.exit_code);
    bind_optional(st, i++, f.signal);
    bind_real(st, i++, f.samples_per_s);
    bind_real(st, i++, f.tokens_per_s);
    bind_real(st, i++, f.peak_allocated);
    bind_real(st, i++, f.peak_reserved);
    st.bind(i++, f.breakdown.is_null() ? std::string("{}") : f.breakdown.dump());
    st.bind(i++, f.param_digest);
    st.bind(i++, f.optimizer_digest);
    bind_real(st, i++, f.eval_loss);
    st.bind(i++, f.eval_loss_bits);
    bind_optional(st, i++, f.environment_id);
    st.bind(i++, f.trial_dir);
    st.bind(i++, f.stdout_log);
    st.bind(i++, f.stderr_log);
    st.bind(i++, f.result_path);
    st.bind(i++, f.result_json);
    bind_real(st, i++, unix_now());
    st.bind(i++, id);
    st.exec();
    insert_steps(*db_, id, f);
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
    const double now = unix_now();
    SQLite::Statement st(*db_,
                         "UPDATE trials SET heartbeat_at = ? WHERE id = ? AND state = 'running'");
    bind_real(st, 1, now);
    st.bind(2, trial_id);
    st.exec();
    const auto hb = nlohmann::json::parse(trainer_heartbeat_json, nullptr, false);
    SQLite::Statement h(*db_,
                        "INSERT OR REPLACE INTO heartbeats(trial_id, pid, step, time, updated_at) "
                        "VALUES(?,?,?,?,?)");
    h.bind(1, trial_id);
    bind_heartbeat_int(h, 2, hb, "pid");
    bind_heartbeat_int(h, 3, hb, "step");
    if (hb.is_object() && hb.contains("time") && hb["time"].is_number()) {
      bind_real(h, 4, hb["time"].get<double>());
    } else {
      h.bind(4);
    }
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
  SQLite::Statement q(*db_, fmt::format("SELECT {} FROM trials WHERE campaign_id = ? ORDER BY id",
                                        trial_map().select_list()));
  q.bind(1, campaign_id);
  return trial_map().read_all(q);
}

}  // namespace sg::agent
