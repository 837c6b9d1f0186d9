// A campaign summary read from the store: for `speedgate report` and the
// summary `tune` prints. Read-only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sg::agent {

class Store;

// campaign_id nullopt = the latest campaign. Throws UsageError when there is none.
nlohmann::json campaign_summary(Store& store, std::optional<std::int64_t> campaign_id);
// The campaign's finals at the target micro-batch (table target_finals; empty for an older
// database): [{budget, config_key, evaluation_id, micro_batch, steps, rounds, disposition,
// speedup, spread, samples_per_s, baseline_samples_per_s, reason, trial_ids}].
nlohmann::json campaign_finals(Store& store, std::int64_t campaign_id);
std::string format_summary(const nlohmann::json& summary);  // human-readable text

// A configuration key on lines of at most `width` columns (breaking after commas),
// each indented by `indent`: never cut. "" reads "(baseline: all defaults)".
std::string wrap_config_key(const std::string& key, std::size_t indent, std::size_t width);

}  // namespace sg::agent
