#include "agent/store/nightly_store.hpp"

#include <fmt/format.h>

#include "agent/store/connection.hpp"
#include "agent/store/row_maps.hpp"
#include "agent/store/sql_value.hpp"

namespace sg::agent::nightly {

using nlohmann::json;

namespace {

// Every trials column except id and campaign_id, in one order for the copy.
const char* kCopiedTrialColumns =
    "trial_key, purpose, config_key, config_json, seed, steps, micro_batch, grad_accum, repeat, "
    "state, "
    "disposition, run_ok, reason, queued_at, started_at, finished_at, wall_s, exit_code, signal, "
    "samples_per_s, "
    "tokens_per_s, peak_allocated_bytes, peak_reserved_bytes, breakdown_json, param_digest, "
    "optimizer_digest, "
    "eval_loss, eval_loss_bits, environment_id, trial_dir, stdout_log, stderr_log, result_path, "
    "result_json, "
    "host, controller_pid, pgid, heartbeat_at";

}  // namespace

std::optional<std::int64_t> resumable_campaign(Store& store, const CampaignRow& wanted) {
  SQLite::Statement q(
      store_detail::connection(store),
      "SELECT id FROM campaigns WHERE state = 'running' AND workload = ? AND size = ? AND trainer "
      "= ? "
      "AND manifest_json = ? AND options_json = ? AND julianday('now') - julianday(created_at) < ? "
      "ORDER BY id DESC LIMIT 1");
  q.bind(1, wanted.workload);
  q.bind(2, wanted.size);
  q.bind(3, wanted.trainer);
  q.bind(4, wanted.manifest.dump());
  q.bind(5, wanted.options.dump());
  q.bind(6, kResumeWithinHours / 24.0);
  if (!q.executeStep()) return std::nullopt;
  return q.getColumn(0).getInt64();
}

bool never_reused(const std::string& purpose) { return purpose == "baseline" || purpose == "band"; }

std::optional<std::int64_t> copy_identical_trial(Store& store, std::int64_t campaign_id,
                                                 std::int64_t env_id,
                                                 const std::string& trial_key) {
  std::optional<std::int64_t> copied;
  store.write([&] {
    SQLite::Statement have(
        store_detail::connection(store),
        "SELECT 1 FROM trials WHERE campaign_id = ? AND trial_key = ? AND state = 'finished' "
        "AND (disposition IS NULL OR disposition != 'stale')");
    have.bind(1, campaign_id);
    have.bind(2, trial_key);
    if (have.executeStep()) return;
    SQLite::Statement src(
        store_detail::connection(store),
        "SELECT t.id FROM trials t JOIN campaigns c ON c.id = t.campaign_id "
        "JOIN campaigns me ON me.id = ? "
        "WHERE t.trial_key = ? AND t.state = 'finished' AND t.run_ok = 1 AND t.environment_id = ? "
        "AND t.campaign_id != me.id AND c.workload = me.workload AND c.size = me.size "
        "AND c.manifest_json = me.manifest_json ORDER BY t.id DESC LIMIT 1");
    src.bind(1, campaign_id);
    src.bind(2, trial_key);
    src.bind(3, env_id);
    if (!src.executeStep()) return;
    const std::int64_t source = src.getColumn(0).getInt64();
    // A queued copy left by a stale run of this key is superseded by the copy.
    SQLite::Statement drop(
        store_detail::connection(store),
        "DELETE FROM trials WHERE campaign_id = ? AND trial_key = ? AND state = 'queued'");
    drop.bind(1, campaign_id);
    drop.bind(2, trial_key);
    drop.exec();
    SQLite::Statement ins(store_detail::connection(store),
                          fmt::format("INSERT INTO trials(campaign_id, {0}, reused_from) SELECT ?, "
                                      "{0}, id FROM trials WHERE id = ?",
                                      kCopiedTrialColumns));
    ins.bind(1, campaign_id);
    ins.bind(2, source);
    ins.exec();
    const std::int64_t id = store_detail::connection(store).getLastInsertRowid();
    SQLite::Statement steps(
        store_detail::connection(store),
        "INSERT INTO steps(trial_id, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds) "
        "SELECT ?, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds FROM steps WHERE "
        "trial_id = ?");
    steps.bind(1, id);
    steps.bind(2, source);
    steps.exec();
    copied = id;
  });
  return copied;
}

int reused_trials(Store& store, std::int64_t campaign_id) {
  SQLite::Statement q(
      store_detail::connection(store),
      "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND reused_from IS NOT NULL");
  q.bind(1, campaign_id);
  q.executeStep();
  return q.getColumn(0).getInt();
}

json environment_json(Store& store, std::int64_t env_id) {
  SQLite::Statement q(store_detail::connection(store),
                      "SELECT fingerprint_json FROM environments WHERE id = ?");
  q.bind(1, env_id);
  if (!q.executeStep()) return json::object();
  return json::parse(column_text(q.getColumn(0)), nullptr, false);
}

std::optional<PreviousEnvironment> previous_environment(Store& store, std::int64_t campaign_id,
                                                        const std::string& workload,
                                                        const std::string& size) {
  SQLite::Statement q(
      store_detail::connection(store),
      "SELECT c.id, e.id, e.fingerprint_hash, e.fingerprint_json FROM campaigns c "
      "JOIN environments e ON e.id = c.environment_id "
      "WHERE c.id < ? AND c.workload = ? AND c.size = ? ORDER BY c.id DESC LIMIT 1");
  q.bind(1, campaign_id);
  q.bind(2, workload);
  q.bind(3, size);
  if (!q.executeStep()) return std::nullopt;
  PreviousEnvironment p;
  p.campaign_id = q.getColumn(0).getInt64();
  p.environment_id = q.getColumn(1).getInt64();
  p.hash = column_text(q.getColumn(2));
  p.fingerprint = json::parse(column_text(q.getColumn(3)), nullptr, false);
  return p;
}

json fingerprint_diff(const json& before, const json& after) {
  json diff = json::object();
  if (!before.is_object() || !after.is_object()) return {{"fingerprint", {before, after}}};
  for (const auto& [k, v] : before.items()) {
    if (!after.contains(k) || after[k] != v) diff[k] = {v, after.value(k, json())};
  }
  for (const auto& [k, v] : after.items()) {
    if (!before.contains(k)) diff[k] = {json(), v};
  }
  return diff;
}

void begin_nightly_run(Store& store, std::int64_t campaign_id, double budget_minutes) {
  store.write([&] {
    SQLite::Statement st(
        store_detail::connection(store),
        "INSERT INTO nightly_runs(campaign_id, budget_minutes, state) VALUES(?, ?, 'running') "
        "ON CONFLICT(campaign_id) DO UPDATE SET state = 'running', budget_minutes = "
        "excluded.budget_minutes");
    st.bind(1, campaign_id);
    bind_real(st, 2, budget_minutes);
    st.exec();
  });
}

void set_nightly_environment(Store& store, const NightlyRunRow& r) {
  store.write([&] {
    SQLite::Statement st(store_detail::connection(store),
                         "UPDATE nightly_runs SET previous_campaign_id = ?, environment_changed = "
                         "?, previous_fingerprint_hash = ?, "
                         "fingerprint_hash = ?, environment_diff_json = ? WHERE campaign_id = ?");
    if (r.previous_campaign_id)
      st.bind(1, *r.previous_campaign_id);
    else
      st.bind(1);
    st.bind(2, r.environment_changed ? 1 : 0);
    st.bind(3, r.previous_fingerprint_hash);
    st.bind(4, r.fingerprint_hash);
    st.bind(5, r.environment_diff.dump());
    st.bind(6, r.campaign_id);
    st.exec();
  });
}

void finish_nightly_run(Store& store, std::int64_t campaign_id, int exit_code,
                        const json& summary) {
  store.write([&] {
    SQLite::Statement st(
        store_detail::connection(store),
        "UPDATE nightly_runs SET state = 'finished', exit_code = ?, summary_json = ?, "
        "finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE campaign_id = ?");
    st.bind(1, exit_code);
    st.bind(2, summary.dump());
    st.bind(3, campaign_id);
    st.exec();
  });
}

std::vector<StoredPreset> stored_presets(Store& store, const std::string& workload,
                                         const std::string& size) {
  SQLite::Statement q(
      store_detail::connection(store),
      fmt::format("SELECT p.id, {}, p.demoted_at, p.demoted_reason FROM presets p "
                  "JOIN campaigns c ON c.id = p.campaign_id WHERE c.workload = ? AND c.size = ? "
                  "ORDER BY p.id DESC",
                  preset_map().select_list(kSchemaVersion, "p")));
  q.bind(1, workload);
  q.bind(2, size);
  std::vector<StoredPreset> out;
  const int after = 1 + preset_map().size();
  while (q.executeStep()) {
    StoredPreset s;
    s.id = q.getColumn(0).getInt64();
    s.row = preset_map().read(q, 1);
    s.demoted_at = column_text(q.getColumn(after));
    s.demoted_reason = column_text(q.getColumn(after + 1));
    out.push_back(std::move(s));
  }
  return out;
}

void add_verification(Store& store, const VerificationRow& v) {
  store.write([&] {
    SQLite::Statement st(
        store_detail::connection(store),
        "INSERT INTO preset_verifications(campaign_id, preset_id, name, path, config_key, verdict, "
        "recorded_speedup, measured_speedup, regression_limit, evaluation_id, reason) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, v.campaign_id);
    if (v.preset_id)
      st.bind(2, *v.preset_id);
    else
      st.bind(2);
    st.bind(3, v.name);
    st.bind(4, v.path);
    st.bind(5, v.config_key);
    st.bind(6, v.verdict);
    bind_real(st, 7, v.recorded_speedup);
    bind_real(st, 8, v.measured_speedup);
    bind_real(st, 9, v.regression_limit);
    if (v.evaluation_id)
      st.bind(10, *v.evaluation_id);
    else
      st.bind(10);
    st.bind(11, v.reason);
    st.exec();
  });
}

void demote_preset(Store& store, std::int64_t preset_id, const std::string& reason) {
  store.write([&] {
    SQLite::Statement st(
        store_detail::connection(store),
        "UPDATE presets SET demoted_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), demoted_reason = ? "
        "WHERE id = ? AND demoted_at IS NULL");
    st.bind(1, reason);
    st.bind(2, preset_id);
    st.exec();
  });
}

}  // namespace sg::agent::nightly
