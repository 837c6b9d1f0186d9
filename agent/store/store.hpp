// The SQLite store: WAL, busy_timeout >= 5 s, every write inside BEGIN IMMEDIATE,
// schema versioned by PRAGMA user_version and migrated in one immediate
// transaction; a DB from a newer schema is refused. Knows no strategy. SQL lives only
// under agent/store/: one file per table (docs/controller.md, "Store"), read-only query
// modules in agent/store/queries/; no raw connection is handed out.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/disposition.hpp"
#include "agent/store/campaigns.hpp"
#include "agent/store/evaluations.hpp"
#include "agent/store/presets.hpp"
#include "agent/store/speed_evidence.hpp"
#include "agent/store/trials.hpp"

namespace SQLite {
class Database;
}

namespace sg::agent {

constexpr int kBusyTimeoutMs = 10000;

class Store;
namespace store_detail {
SQLite::Database& connection(Store& store);  // agent/store/connection.hpp
}

class Store {
 public:
  // Creates the file if needed (unless read_only) and migrates to kSchemaVersion.
  // Throws StoreError when the DB is from a newer schema or cannot be opened.
  explicit Store(const std::string& path, bool read_only = false);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  int schema_version();

  // Runs f inside BEGIN IMMEDIATE ... COMMIT (rollback on exception).
  void write(const std::function<void()>& f);

  // Environments and campaigns (agent/store/campaigns.cpp).
  std::int64_t upsert_environment(const std::string& hash, const nlohmann::json& fingerprint);
  std::optional<std::string> environment_hash(std::int64_t id);
  std::optional<EnvironmentRow> environment(std::int64_t id);

  std::int64_t create_campaign(const CampaignRow& c);
  std::optional<CampaignRow> campaign(std::int64_t id);
  std::optional<CampaignRow> latest_campaign(bool unfinished_only, const std::string& workload = "",
                                             const std::string& size = "");
  void set_campaign_environment(std::int64_t id, std::int64_t env_id);
  void set_campaign_determinism(std::int64_t id, bool deterministic, const std::string& note);
  void finish_campaign(std::int64_t id);
  // Back to running (tune --resume of a campaign that finished, e.g. because its budget was spent).
  void reopen_campaign(std::int64_t id);

  // Trials (agent/store/trials.cpp). The newest row with this key (finished, running or queued).
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
  // (agent/store/stale_trials.cpp)
  std::vector<std::int64_t> mark_stale_and_requeue(std::int64_t campaign_id, double stale_after_s);

  // Baselines, evaluations, projections (agent/store/evaluations.cpp).
  void add_baseline(std::int64_t campaign_id, int steps, const std::string& role, int seed,
                    std::int64_t trial_id);
  std::int64_t add_evaluation(const EvaluationRow& e);
  std::vector<EvaluationRow> evaluations(std::int64_t campaign_id);
  void set_frontier(std::int64_t campaign_id, const std::vector<std::int64_t>& evaluation_ids);
  void add_projection(const ProjectionRow& p);
  // The stored projections of one configuration (inputs_json parsed; discarded JSON if malformed).
  std::vector<ProjectionRow> projections(std::int64_t campaign_id, const std::string& config_key);

  // Kernel trials and timings (agent/store/kernel_timings.cpp).
  void add_kernel_trial(std::int64_t campaign_id, const std::string& family,
                        const nlohmann::json& params, std::int64_t evaluation_id);
  // Idempotent per (trial, params): a resumed campaign may record a trial's rows again.
  void add_kernel_timings(const std::vector<KernelTimingRow>& rows);
  // A campaign's kernel timings, all families ("" ) or one, in insertion order.
  std::vector<KernelTimingRow> kernel_timings(std::int64_t campaign_id,
                                              const std::string& family = "");

  // Finals (agent/store/target_finals.cpp). Replaces every row the campaign had (a
  // resumed campaign records its finals again, possibly for another pool), in one
  // transaction. Rows' campaign_id is taken from the argument.
  void set_target_finals(std::int64_t campaign_id, const std::vector<TargetFinalRow>& rows);
  // Empty for a database older than schema v5 (opened read-only, not migrated).
  std::vector<TargetFinalRow> target_finals(std::int64_t campaign_id);

  // Presets (agent/store/presets.cpp).
  std::int64_t add_preset(const PresetRow& p);
  // The newest emitted preset of that name (budget) in the campaign.
  std::optional<PresetRow> latest_preset(std::int64_t campaign_id, const std::string& name);
  // Every preset row of the campaign, oldest first.
  std::vector<PresetRow> presets(std::int64_t campaign_id);

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

 private:
  friend SQLite::Database& store_detail::connection(Store& store);
  void open(const std::string& path, bool read_only);
  void migrate();
  // Inserts a queued copy of a trial row (requeued_from = its id). REQUIRES: inside write().
  void requeue_copy(std::int64_t trial_id);
  std::unique_ptr<SQLite::Database> db_;
  bool read_only_;
};

double unix_now();
std::string host_name();

}  // namespace sg::agent
