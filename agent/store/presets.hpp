// Emitted presets: rows of the presets table (with the trial ids that justify them).
// Store methods: agent/store/presets.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sg::agent {

struct PresetRow {
  std::int64_t campaign_id = 0;
  std::string name, path, config_key, fingerprint_hash, content;
  double budget_bytes = 0, speedup = 0, speedup_spread = 0, projected_peak_bytes = 0;
  std::optional<std::int64_t> evaluation_id;
  std::vector<std::int64_t> trial_ids;
  std::string created_at;  // read only: set by the database
};

}  // namespace sg::agent
