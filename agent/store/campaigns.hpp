// Campaigns and their environments (fingerprints): rows of the campaigns and
// environments tables. Store methods: agent/store/campaigns.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sg::agent {

struct CampaignRow {
  std::int64_t id = 0;
  std::string created_at, finished_at, state, workload, size, trainer;
  nlohmann::json manifest, options;
  std::optional<std::int64_t> environment_id;
  std::optional<bool> deterministic;
  std::string note;
};

// One environment fingerprint (fingerprint parsed; discarded JSON if malformed).
struct EnvironmentRow {
  std::int64_t id = 0;
  std::string hash;
  nlohmann::json fingerprint;
};

}  // namespace sg::agent
