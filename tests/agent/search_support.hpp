// What the search tests share: the recorded manifest and trial table
// (tests/agent/data/recorded_*.json) replayed without a trainer, and recorded rows.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/common/files.hpp"
#include "agent/search/replay.hpp"
#include "agent/search/strategy.hpp"

namespace sg::agent::test {

using Call = std::pair<std::string, int>;

inline bool called_in(const ReplayEvaluator& r, const std::string& key, int steps) {
  const auto& c = r.calls();
  return std::find(c.begin(), c.end(), Call{key, steps}) != c.end();
}

inline nlohmann::json load(const std::string& name) {
  auto text = read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/tests/agent/data/" + name);
  return nlohmann::json::parse(text.value());
}

// One recorded evaluation at 4 steps (the tests' full_steps).
inline nlohmann::json row(const char* key, const char* disposition, double speedup) {
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [k, v] : config_from_key(key)) config[k] = v;
  return nlohmann::json{
      {"config", config}, {"steps", 4}, {"disposition", disposition}, {"speedup", speedup}};
}

// What "stack" meets on the recorded manifest: BAD breaks the bitwise set, which is minified
// and left out; the best is A=1,B=1,C=1,W=4 at 1.6x.
inline std::vector<nlohmann::json> stack_rows() {
  return {row("A=1,B=1,BAD=1,W=4", "gate_failed", 0),
          row("B=1,BAD=1,W=4", "gate_failed", 0),
          row("BAD=1,W=4", "gate_failed", 0),
          row("W=4", "accepted", 1.1),
          row("BAD=1", "gate_failed", 0),
          row("A=1,B=1,W=4", "accepted", 1.5),
          row("A=1,B=1,C=1,W=4", "accepted", 1.6),
          row("A=1,B=1,C=1,MEM=2,W=4", "accepted", 1.7),
          row("A=1,B=1,C=1,MEM=4,W=4", "accepted", 1.8)};
}

inline nlohmann::json table(std::vector<nlohmann::json> rows) { return {{"entries", rows}}; }

// stack_rows() plus what "prune" meets after it: dropping B is faster (1.7x), every other
// drop slower; the memory values on the pruned A=1,C=1,W=4.
inline std::vector<nlohmann::json> stack_then_prune_rows() {
  auto rows = stack_rows();
  for (auto r : {row("B=1,W=4", "accepted", 1.2), row("A=1,C=1,W=4", "accepted", 1.7),
                 row("A=1,B=1,C=1", "accepted", 1.3), row("A=1,W=4", "accepted", 1.4),
                 row("A=1,C=1", "accepted", 1.4), row("A=1,C=1,MEM=2,W=4", "accepted", 1.75),
                 row("A=1,C=1,MEM=4,W=4", "accepted", 1.8)}) {
    rows.push_back(r);
  }
  return rows;
}

struct SearchTest : ::testing::Test {
  Manifest manifest = parse_manifest(load("recorded_manifest.json"));
  ReplayEvaluator replay{load("recorded_trials.json")};
  SearchOptions opts() {
    SearchOptions o;
    o.screen_steps = 1;
    o.full_steps = 4;
    return o;
  }
  bool called(const std::string& key, int steps) { return called_in(replay, key, steps); }
  // Strategy prune run on `r` from the combination `start`.
  SearchContext pruned_from(ReplayEvaluator& r, const char* start, const SearchOptions& o) {
    SearchContext ctx(manifest, r, o);
    ctx.best_combination = config_from_key(start);
    ctx.run_strategy("prune");
    return ctx;
  }
};

}  // namespace sg::agent::test
