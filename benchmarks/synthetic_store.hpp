// Fills a speedgate store with synthetic but well-formed campaigns (nights), trainer
// runs, evaluations, projections and presets, for dashboard tests and the dashboard
// benchmark (e.g. 10,000 trials). Values are deterministic for a given seed.
#pragma once
#include <cstdint>
#include <string>

namespace sg::bench {

struct SyntheticStoreSpec {
  int campaigns = 2;                 // nights
  int evaluations_per_campaign = 20; // dashboard "trials"
  std::uint32_t seed = 1;
  std::string log_dir;               // where per-run stdout/stderr logs are written ("" = none)
};

struct SyntheticStoreCounts {
  std::int64_t evaluations = 0, runs = 0, presets = 0, projections = 0;
  std::int64_t accepted = 0, gate_failed = 0, slower = 0, pruned = 0, oom = 0;
};

// Creates (or extends) the store at db_path through the real Store (schema, migrations).
SyntheticStoreCounts write_synthetic_store(const std::string& db_path, const SyntheticStoreSpec& spec);

}  // namespace sg::bench
