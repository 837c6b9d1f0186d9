// `presets emit`: per memory budget of a campaign, the fastest accepted
// configuration (confirmed at the full step budget) whose projected peak fits,
// written as <name>.env with provenance comments, plus README.md describing every
// switch. All files are rendered first and then written atomically.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sg::agent {

class Store;

struct EmitResult {
  nlohmann::json summary;       // what was written, per budget
  bool all_budgets_met = true;  // false when some budget had nothing that fits
};

// campaign_id nullopt = the latest finished campaign. Throws UsageError when there
// is none.
EmitResult emit_presets(Store& store, std::optional<std::int64_t> campaign_id,
                        const std::string& out_dir);

}  // namespace sg::agent
