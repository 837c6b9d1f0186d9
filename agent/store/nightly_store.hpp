// The nightly run's rows in the store (schema version 2): nightly_runs, warm-start
// copies of earlier trials, the previous campaign's environment, preset
// verifications and demotions. Free functions over Store, called by agent/nightly/;
// the Store class itself knows nothing of nights.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent::nightly {

// A nightly campaign that was killed is resumed by a rerun within this many hours;
// an older unfinished one is left as it is and a new night starts.
constexpr double kResumeWithinHours = 12;

// The newest unfinished campaign with exactly these (workload, size, trainer,
// manifest, options), created less than kResumeWithinHours ago.
std::optional<std::int64_t> resumable_campaign(Store& store, const CampaignRow& wanted);

// Purposes that are never warm-started: tonight's baseline and seed band are
// always measured again.
bool never_reused(const std::string& purpose);

// Copies the newest finished, valid trial with `trial_key` from another campaign of
// the same workload, size and manifest whose result came from environment `env_id`
// into `campaign_id` (steps included, reused_from set; a queued row of the key is
// dropped). Does nothing when the campaign already has a finished row for the key or
// no such trial exists. Returns the new row's id.
std::optional<std::int64_t> copy_identical_trial(Store& store, std::int64_t campaign_id,
                                                 std::int64_t env_id, const std::string& trial_key);
int reused_trials(Store& store, std::int64_t campaign_id);

struct PreviousEnvironment {
  std::int64_t campaign_id = 0, environment_id = 0;
  std::string hash;
  nlohmann::json fingerprint;
};
// The newest campaign before `campaign_id` (same workload and size) that recorded
// an environment.
std::optional<PreviousEnvironment> previous_environment(Store& store, std::int64_t campaign_id,
                                                        const std::string& workload,
                                                        const std::string& size);
nlohmann::json environment_json(Store& store, std::int64_t env_id);
// {field: [before, after]} for every fingerprint field that differs.
nlohmann::json fingerprint_diff(const nlohmann::json& before, const nlohmann::json& after);

struct NightlyRunRow {
  std::int64_t campaign_id = 0;
  std::optional<std::int64_t> previous_campaign_id;
  bool environment_changed = false;
  std::string previous_fingerprint_hash, fingerprint_hash;
  nlohmann::json environment_diff = nlohmann::json::object();
  double budget_minutes = 0;
};
void begin_nightly_run(Store& store, std::int64_t campaign_id, double budget_minutes);
void set_nightly_environment(Store& store, const NightlyRunRow& row);
void finish_nightly_run(Store& store, std::int64_t campaign_id, int exit_code,
                        const nlohmann::json& summary);

// Presets rows of this workload and size, newest first (demoted ones included).
struct StoredPreset {
  PresetRow row;
  std::int64_t id = 0;
  std::string demoted_at, demoted_reason;
};
std::vector<StoredPreset> stored_presets(Store& store, const std::string& workload,
                                         const std::string& size);

struct VerificationRow {
  std::int64_t campaign_id = 0;
  std::optional<std::int64_t> preset_id, evaluation_id;
  std::string name, path, config_key, verdict, reason;
  double recorded_speedup = 0, measured_speedup = 0, regression_limit = 0;
};
void add_verification(Store& store, const VerificationRow& v);
void demote_preset(Store& store, std::int64_t preset_id, const std::string& reason);

}  // namespace sg::agent::nightly
