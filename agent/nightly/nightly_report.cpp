// NightlyOptions' checks and NightlyReport's verdict, exit code and JSON (nightly.hpp).
#include "agent/common/errors.hpp"
#include "agent/common/json_array.hpp"
#include "agent/nightly/nightly.hpp"

namespace sg::agent::nightly {

using nlohmann::json;

void NightlyOptions::validate() const {
  campaign.validate();
  if (campaign.budget.minutes <= 0 && campaign.budget.trials <= 0) {
    throw UsageError("--budget-minutes must be > 0 (a nightly run is time-budgeted)");
  }
  if (!(regression_limit > 0 && regression_limit <= 1))
    throw UsageError("--regression-limit must be in (0, 1]");
  if (presets_dir.empty()) throw UsageError("--presets-dir must not be empty");
}

bool NightlyReport::any_demoted() const {
  for (const auto& c : checks) {
    if (c.verdict == "demoted") return true;
  }
  return false;
}

int NightlyReport::exit_code() const {
  if (!failure.empty() || any_demoted()) return 1;
  for (const auto& c : checks) {
    if (c.verdict != "kept" && c.verdict != "skipped") return 1;
  }
  return 0;
}

namespace {

// The preset file a check or a write is about.
template <class Preset>
json preset_file_json(const Preset& p) {
  return {{"name", p.name}, {"path", p.path}, {"config", p.config_key}};
}

json check_json(const PresetCheck& c) {
  json j = preset_file_json(c);
  j.update({{"verdict", c.verdict},
            {"reason", c.reason},
            {"recorded_speedup", c.recorded_speedup},
            {"measured_speedup", c.measured_speedup},
            {"evaluation_id", c.evaluation_id.value_or(0)}});
  return j;
}

json written_json(const PresetWrite& w) {
  json j = preset_file_json(w);
  j.update({{"speedup", w.speedup},
            {"replaced_config", w.replaced_config_key},
            {"replaced_speedup", w.replaced_speedup}});
  return j;
}

}  // namespace

json NightlyReport::to_json() const {
  return {{"campaign_id", campaign_id},
          {"resumed", resumed},
          {"environment_changed", environment_changed},
          {"previous_campaign_id", previous_campaign_id.value_or(0)},
          {"environment_diff", environment_diff},
          {"presets", json_array(checks, check_json)},
          {"written", json_array(written, written_json)},
          {"notes", notes},
          {"trials_run", trials_run},
          {"trials_reused", trials_reused},
          {"budget_spent", budget_spent},
          {"failure", failure},
          {"exit_code", exit_code()}};
}

}  // namespace sg::agent::nightly
