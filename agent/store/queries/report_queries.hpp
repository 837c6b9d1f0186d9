// Read-only queries of reports and benchmarks that the Store's per-table methods do not
// answer in the order or shape they need.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent {

struct AcceptedEvaluation {
  std::int64_t id = 0;
  std::string strategy;
  nlohmann::json config;  // config_json parsed (discarded if malformed)
  double speedup = 0;
};

// A campaign's accepted evaluations, in SQLite's order of `speedup DESC, id` (a
// non-finite speedup, stored as text, sorts first).
std::vector<AcceptedEvaluation> accepted_evaluations_by_speedup(Store& store,
                                                                std::int64_t campaign_id);

}  // namespace sg::agent
