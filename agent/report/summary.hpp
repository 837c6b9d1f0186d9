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
std::string format_summary(const nlohmann::json& summary);  // human-readable text

}  // namespace sg::agent
