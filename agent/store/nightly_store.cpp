#include "agent/store/nightly_store.hpp"

#include <fmt/format.h>

#include "agent/store/connection.hpp"
#include "agent/store/row_maps.hpp"
#include "agent/store/statement.hpp"

namespace sg::agent::nightly {

using nlohmann::json;

namespace {

// Every trials column except id and campaign_id, in one order for the copy.
const char* kCopiedTrialColumns =
    "trial_key, purpose, config_key, config_json, seed, steps, micro_batch, grad_accum, repeat, "
    "state, disposition, run_ok, reason, queued_at, started_at, finished_at, wall_s, exit_code, "
    "signal, samples_per_s, tokens_per_s, peak_allocated_bytes, peak_reserved_bytes, "
    "breakdown_json, param_digest, optimizer_digest, eval_loss, eval_loss_bits, environment_id, "
    "trial_dir, stdout_log, stderr_log, result_path, result_json, host, controller_pid, pgid, "
    "heartbeat_at";

}  // namespace

std::optional<std::int64_t> resumable_campaign(Store& store, const CampaignRow& wanted) {
  return query_one(
      store_detail::connection(store),
      "SELECT id FROM campaigns WHERE state = 'running' AND workload = ? AND size = ? AND "
      "trainer = ? AND manifest_json = ? AND options_json = ? AND julianday('now') - "
      "julianday(created_at) < ? ORDER BY id DESC LIMIT 1",
      first_int64, wanted.workload, wanted.size, wanted.trainer, wanted.manifest.dump(),
      wanted.options.dump(), kResumeWithinHours / 24.0);
}

bool never_reused(const std::string& purpose) { return purpose == "baseline" || purpose == "band"; }

std::optional<std::int64_t> copy_identical_trial(Store& store, std::int64_t campaign_id,
                                                 std::int64_t env_id,
                                                 const std::string& trial_key) {
  std::optional<std::int64_t> copied;
  SQLite::Database& db = store_detail::connection(store);
  store.write([&] {
    if (query_one(db,
                  "SELECT 1 FROM trials WHERE campaign_id = ? AND trial_key = ? AND state = "
                  "'finished' AND (disposition IS NULL OR disposition != 'stale')",
                  first_int64, campaign_id, trial_key)) {
      return;
    }
    const auto source = query_one(
        db,
        "SELECT t.id FROM trials t JOIN campaigns c ON c.id = t.campaign_id "
        "JOIN campaigns me ON me.id = ? "
        "WHERE t.trial_key = ? AND t.state = 'finished' AND t.run_ok = 1 AND t.environment_id = ? "
        "AND t.campaign_id != me.id AND c.workload = me.workload AND c.size = me.size "
        "AND c.manifest_json = me.manifest_json ORDER BY t.id DESC LIMIT 1",
        first_int64, campaign_id, trial_key, env_id);
    if (!source) return;
    // A queued copy left by a stale run of this key is superseded by the copy.
    exec(db, "DELETE FROM trials WHERE campaign_id = ? AND trial_key = ? AND state = 'queued'",
         campaign_id, trial_key);
    exec(db,
         fmt::format("INSERT INTO trials(campaign_id, {0}, reused_from) SELECT ?, {0}, id FROM "
                     "trials WHERE id = ?",
                     kCopiedTrialColumns),
         campaign_id, *source);
    const std::int64_t id = db.getLastInsertRowid();
    exec(db,
         "INSERT INTO steps(trial_id, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds) "
         "SELECT ?, step, loss, loss_bits, grad_norm, grad_norm_bits, seconds FROM steps WHERE "
         "trial_id = ?",
         id, *source);
    copied = id;
  });
  return copied;
}

int reused_trials(Store& store, std::int64_t campaign_id) {
  return static_cast<int>(
      query_one(store_detail::connection(store),
                "SELECT COUNT(*) FROM trials WHERE campaign_id = ? AND reused_from IS NOT NULL",
                first_int64, campaign_id)
          .value_or(0));
}

json environment_json(Store& store, std::int64_t env_id) {
  const auto text =
      query_one(store_detail::connection(store),
                "SELECT fingerprint_json FROM environments WHERE id = ?", first_text, env_id);
  if (!text) return json::object();
  return json::parse(*text, nullptr, false);
}

std::optional<PreviousEnvironment> previous_environment(Store& store, std::int64_t campaign_id,
                                                        const std::string& workload,
                                                        const std::string& size) {
  static const RowMap<PreviousEnvironment> map{
      col("c.id", &PreviousEnvironment::campaign_id),
      col("e.id", &PreviousEnvironment::environment_id),
      col("e.fingerprint_hash", &PreviousEnvironment::hash),
      col("e.fingerprint_json", &PreviousEnvironment::fingerprint),
  };
  return map.select_one(store_detail::connection(store),
                        "FROM campaigns c JOIN environments e ON e.id = c.environment_id "
                        "WHERE c.id < ? AND c.workload = ? AND c.size = ? ORDER BY c.id DESC "
                        "LIMIT 1",
                        campaign_id, workload, size);
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
  write_exec(store,
             "INSERT INTO nightly_runs(campaign_id, budget_minutes, state) VALUES(?, ?, 'running') "
             "ON CONFLICT(campaign_id) DO UPDATE SET state = 'running', budget_minutes = "
             "excluded.budget_minutes",
             campaign_id, budget_minutes);
}

void set_nightly_environment(Store& store, const NightlyRunRow& r) {
  write_exec(store,
             "UPDATE nightly_runs SET previous_campaign_id = ?, environment_changed = ?, "
             "previous_fingerprint_hash = ?, fingerprint_hash = ?, environment_diff_json = ? "
             "WHERE campaign_id = ?",
             r.previous_campaign_id, r.environment_changed, r.previous_fingerprint_hash,
             r.fingerprint_hash, r.environment_diff.dump(), r.campaign_id);
}

void finish_nightly_run(Store& store, std::int64_t campaign_id, int exit_code,
                        const json& summary) {
  write_exec(store,
             "UPDATE nightly_runs SET state = 'finished', exit_code = ?, summary_json = ?, "
             "finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE campaign_id = ?",
             exit_code, summary.dump(), campaign_id);
}

std::vector<StoredPreset> stored_presets(Store& store, const std::string& workload,
                                         const std::string& size) {
  const int after = 1 + preset_map().size();
  return query_all(
      store_detail::connection(store),
      fmt::format("SELECT p.id, {}, p.demoted_at, p.demoted_reason FROM presets p "
                  "JOIN campaigns c ON c.id = p.campaign_id WHERE c.workload = ? AND c.size = ? "
                  "ORDER BY p.id DESC",
                  preset_map().select_list(kSchemaVersion, "p")),
      [after](SQLite::Statement& q) {
        return StoredPreset{preset_map().read(q, 1), q.getColumn(0).getInt64(),
                            column_text(q.getColumn(after)), column_text(q.getColumn(after + 1))};
      },
      workload, size);
}

void add_verification(Store& store, const VerificationRow& v) {
  write_exec(store,
             "INSERT INTO preset_verifications(campaign_id, preset_id, name, path, config_key, "
             "verdict, recorded_speedup, measured_speedup, regression_limit, evaluation_id, "
             "reason) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
             v.campaign_id, v.preset_id, v.name, v.path, v.config_key, v.verdict,
             v.recorded_speedup, v.measured_speedup, v.regression_limit, v.evaluation_id, v.reason);
}

void demote_preset(Store& store, std::int64_t preset_id, const std::string& reason) {
  write_exec(store,
             "UPDATE presets SET demoted_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), "
             "demoted_reason = ? WHERE id = ? AND demoted_at IS NULL",
             reason, preset_id);
}

}  // namespace sg::agent::nightly
