// The presets a nightly run re-verifies: every <name>.env in the presets directory
// (what users actually source), plus the newest non-demoted DB row of each name that
// has no file. What each one claimed is read from its provenance comment
// ("# speedup: 1.300x ...") written when it was emitted, so a slow drift over many
// nights is still measured against the original claim.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/common/units.hpp"
#include "agent/protocol/config.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::nightly {

struct CurrentPreset {
  std::string name, path, content;
  Config config;
  std::string invalid;          // non-empty: the file no longer parses against the manifest
  double recorded_speedup = 0;  // the claim it was emitted with (0 = unknown)
  double budget_bytes = 0;      // 0 = unknown: no memory check
  std::optional<std::int64_t> preset_id;   // the DB row it is recorded as
  std::optional<std::string> device_kind;  // from its fingerprint comment ("NVIDIA H200", "cpu")
};

// REQUIRES: budgets maps preset names to bytes (the campaign's --memory-budget).
std::vector<CurrentPreset> current_presets(Store& store, const std::string& workload,
                                           const std::string& size, const std::string& presets_dir,
                                           const Manifest& manifest,
                                           const std::vector<NamedBudget>& budgets);

// What a preset claimed at the campaign's micro-batch: its "# campaign speedup: 1.300x"
// provenance comment, else (older presets) its "# speedup: 1.300x"; nullopt when absent.
std::optional<double> claimed_speedup(const std::string& preset_text);

}  // namespace sg::agent::nightly
