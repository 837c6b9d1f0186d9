// The SQLite store: WAL, busy_timeout >= 5 s, every write inside BEGIN IMMEDIATE,
// schema versioned by PRAGMA user_version and migrated in one immediate
// transaction; a DB from a newer schema is refused. Knows no strategy.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "agent/common/disposition.hpp"

namespace sg::agent {

constexpr int kBusyTimeoutMs = 10000;

struct CampaignRow {
  std::int64_t id = 0;
  std::string created_at, finished_at, state, workload, size, trainer;
  nlohmann::json manifest, options;
  std::optional<std::int64_t> environment_id;
  std::optional<bool> deterministic;
  std::string note;
};

struct TrialRow {
  std::int64_t id = 0, campaign_id = 0;
  std::string trial_key, purpose, config_key;
  std::string config_json = "{}";  // used by claim_trial
  int seed = 0, steps = 0, micro_batch = 1, grad_accum = 1, repeat = 0;
  std::string state;
  std::optional<Disposition> disposition;
  bool run_ok = false;
  std::string reason;
  double wall_s = 0, samples_per_s = 0, peak_allocated_bytes = 0;
  std::optional<int> exit_code, signal;
  std::string param_digest, optimizer_digest, stdout_log, stderr_log, result_path, result_json;
  double eval_loss = 0;
  std::string host;
  int controller_pid = 0, pgid = 0;
  double heartbeat_at = 0;
  std::optional<std::int64_t> requeued_from;
};

// What the runner learned, written when a trial finishes.
struct TrialFinish {
  std::optional<Disposition> disposition;  // failure, or nullopt when run_ok
  bool run_ok = false;
  std::string reason;
  double wall_s = 0;
  std::optional<int> exit_code, signal;
  std::string stdout_log, stderr_log, result_path, result_json, trial_dir;
  // Copied from a valid result:
  double samples_per_s = 0, tokens_per_s = 0, peak_allocated = 0, peak_reserved = 0, eval_loss = 0;
  std::string eval_loss_bits, param_digest, optimizer_digest;
  nlohmann::json breakdown;
  std::optional<std::int64_t> environment_id;
  struct Step {
    int step;
    double loss;
    std::string loss_bits;
    double grad_norm;
    std::string grad_norm_bits;
    double seconds;
  };
  std::vector<Step> steps;
};

struct EvaluationRow {
  std::int64_t id = 0, campaign_id = 0;
  std::string strategy, config_key;
  int steps = 0;
  Disposition disposition = Disposition::crash;
  std::string gate_class, reason;
  double speedup = 0, speedup_spread = 0, samples_per_s = 0, projected_peak_bytes = 0;
  // One-sided 95 % bounds of the paired speedup (NaN when unpaired or before schema 6).
  double speedup_lo = std::nan(""), speedup_hi = std::nan("");
  int pairs = 0;
  std::vector<std::int64_t> trial_ids;
  bool on_frontier = false;
};

struct ProjectionRow {
  std::int64_t campaign_id = 0;
  std::string config_key;
  int target_micro_batch = 1, world_size = 1, zero_stage = 0;
  nlohmann::json inputs;
  double projected_bytes = 0;
  std::optional<double> measured_bytes, relative_error;
};

// One variant timed by a kernel trial (table kernel_timings, schema v4).
struct KernelTimingRow {
  std::int64_t id = 0, campaign_id = 0, trial_id = 0;
  std::string family, params;  // params: "plain" or "threads=128,vec=2"
  int micro_batch = 0;
  double fwd_us = 0, fwdbwd_us = 0;
  bool matches_plain = false;
};

// One finalist of one memory budget paired against the baseline at the target micro-batch
// (table target_finals, schema v5; the `finals` strategy).
struct TargetFinalRow {
  std::int64_t id = 0, campaign_id = 0, evaluation_id = 0;
  std::string budget_name, config_key, reason;
  double budget_bytes = 0;
  int micro_batch = 0, steps = 0, rounds = 0;
  Disposition disposition = Disposition::crash;  // accepted = both sides ran every round
  double speedup = 0, speedup_spread = 0, samples_per_s = 0, baseline_samples_per_s = 0;
  double speedup_lo = std::nan(""), speedup_hi = std::nan("");
  std::vector<std::int64_t> trial_ids;
};

// One ABAB pair behind a speed verdict (evaluation_id 0 for A/A noise pairs).
struct SpeedPairRow {
  std::int64_t campaign_id = 0, evaluation_id = 0, base_trial_id = 0, cand_trial_id = 0;
  std::string config_key;
  int steps = 0, pair_index = 0;
  double base_step_s = 0, cand_step_s = 0, log_ratio = 0;
};

struct HostNoiseRow {
  std::int64_t campaign_id = 0;
  int steps = 0, micro_batch = 0, pairs = 0, max_repeats = 0;
  double sd_log_ratio = 0, mean_log_ratio = 0, detectable_speedup = 0, resolution = 0, min_effect = 0;
};

struct RoundingBandRow {
  std::int64_t campaign_id = 0;
  int steps = 0, seeds = 0;
  double perturb_eps = 0, curve_rms = 0, eval_loss_abs = 0, grad_norm_log = 0, seed_curve_rms = 0;
  std::vector<std::int64_t> trial_ids;
};

struct PresetRow {
  std::int64_t campaign_id = 0;
  std::string name, path, config_key, fingerprint_hash, content;
  double budget_bytes = 0, speedup = 0, speedup_spread = 0, projected_peak_bytes = 0;
  std::optional<std::int64_t> evaluation_id;
  std::vector<std::int64_t> trial_ids;
};

class Store {
 public:
  // Creates the file if needed (unless read_only) and migrates to kSchemaVersion.
  // Throws StoreError when the DB is from a newer schema or cannot be opened.
  explicit Store(const std::string& path, bool read_only = false);

  SQLite::Database& db() { return *db_; }
  int schema_version();

  // Runs f inside BEGIN IMMEDIATE ... COMMIT (rollback on exception).
  void write(const std::function<void()>& f);

  std::int64_t upsert_environment(const std::string& hash, const nlohmann::json& fingerprint);
  std::optional<std::string> environment_hash(std::int64_t id);

  std::int64_t create_campaign(const CampaignRow& c);
  std::optional<CampaignRow> campaign(std::int64_t id);
  std::optional<CampaignRow> latest_campaign(bool unfinished_only, const std::string& workload = "",
                                             const std::string& size = "");
  void set_campaign_environment(std::int64_t id, std::int64_t env_id);
  void set_campaign_determinism(std::int64_t id, bool deterministic, const std::string& note);
  void finish_campaign(std::int64_t id);
  // Back to running (tune --resume of a campaign that finished, e.g. because its budget was spent).
  void reopen_campaign(std::int64_t id);

  // The newest row with this key (finished, running or queued).
  std::optional<TrialRow> find_trial(std::int64_t campaign_id, const std::string& key);
  // Takes the queued row with this key (re-queued after a stale run), this
  // controller's reservation of it (shared_claims.hpp) or a new row, fills in `t`'s
  // fields and marks it running (started now) under this controller. Returns its id.
  std::int64_t claim_trial(const TrialRow& t);
  void finish_trial(std::int64_t id, const TrialFinish& f);
  void set_trial_disposition(const std::vector<std::int64_t>& ids, Disposition d);
  void heartbeat(std::int64_t trial_id, const std::string& trainer_heartbeat_json);
  void set_trial_pgid(std::int64_t trial_id, int pgid);
  std::vector<TrialRow> trials(std::int64_t campaign_id);

  // RUNNING rows whose controller is gone (same host and pid dead) or whose
  // heartbeat is older than stale_after_s: marked stale exactly once and a queued
  // copy inserted. Returns the ids marked. Kills the orphan's process group when
  // it still runs the trainer on this host, and every process carrying a dead
  // controller's supervisor token. A key such a controller reserved but never
  // started goes back to the queue (not marked). Trials recorded `killed` by an
  // interrupted controller (reason kInterruptedReason) get a queued copy too.
  std::vector<std::int64_t> mark_stale_and_requeue(std::int64_t campaign_id, double stale_after_s);

  void add_baseline(std::int64_t campaign_id, int steps, const std::string& role, int seed, std::int64_t trial_id);
  std::int64_t add_evaluation(const EvaluationRow& e);
  std::vector<EvaluationRow> evaluations(std::int64_t campaign_id);
  void set_frontier(std::int64_t campaign_id, const std::vector<std::int64_t>& evaluation_ids);
  void add_projection(const ProjectionRow& p);
  // The stored projections of one configuration (inputs_json parsed; discarded JSON if malformed).
  std::vector<ProjectionRow> projections(std::int64_t campaign_id, const std::string& config_key);
  void add_kernel_trial(std::int64_t campaign_id, const std::string& family, const nlohmann::json& params,
                        std::int64_t evaluation_id);
  // Idempotent per (trial, params): a resumed campaign may record a trial's rows again.
  void add_kernel_timings(const std::vector<KernelTimingRow>& rows);
  // A campaign's kernel timings, all families ("" ) or one, in insertion order.
  std::vector<KernelTimingRow> kernel_timings(std::int64_t campaign_id, const std::string& family = "");
  // The campaign's finals: replaces every row it had (a resumed campaign records its
  // finals again, possibly for another pool), in one transaction. Rows' campaign_id is
  // taken from the argument.
  void set_target_finals(std::int64_t campaign_id, const std::vector<TargetFinalRow>& rows);
  // Empty for a database older than schema v5 (opened read-only, not migrated).
  std::vector<TargetFinalRow> target_finals(std::int64_t campaign_id);
  std::int64_t add_preset(const PresetRow& p);

  // Speed evidence (agent/store/speed_store.cpp; empty before schema v6). Pairs of an
  // evaluation are replaced as a whole (a resumed campaign re-derives them).
  void set_speed_pairs(std::int64_t evaluation_id, const std::vector<SpeedPairRow>& rows);
  void add_noise_pairs(std::int64_t campaign_id, int steps, const std::vector<SpeedPairRow>& rows);
  // evaluation_id 0: the campaign's A/A noise pairs.
  std::vector<SpeedPairRow> speed_pairs(std::int64_t campaign_id, std::int64_t evaluation_id);
  void set_host_noise(const HostNoiseRow& row);
  std::vector<HostNoiseRow> host_noise(std::int64_t campaign_id);
  void set_rounding_band(const RoundingBandRow& row);
  std::vector<RoundingBandRow> rounding_bands(std::int64_t campaign_id);
  // The newest emitted preset of that name (budget) in the campaign.
  std::optional<PresetRow> latest_preset(std::int64_t campaign_id, const std::string& name);

 private:
  void migrate();
  // Inserts a queued copy of a trial row (requeued_from = its id). REQUIRES: inside write().
  void requeue_copy(std::int64_t trial_id);
  std::unique_ptr<SQLite::Database> db_;
  bool read_only_;
};

// NaN-safe REAL binding: non-finite values are stored as TEXT 'NaN'/'Inf'/'-Inf'.
void bind_real(SQLite::Statement& st, int index, double v);
void bind_real(SQLite::Statement& st, int index, const std::optional<double>& v);
double column_real(const SQLite::Column& c);

double unix_now();
std::string host_name();

}  // namespace sg::agent
