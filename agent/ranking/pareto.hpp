// The throughput x projected-peak Pareto frontier, and the per-budget pick that
// presets use: the fastest accepted configuration whose projection fits.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace sg::agent {

struct FrontierPoint {
  std::int64_t id = 0;
  double speedup = 0;         // throughput relative to the baseline
  double projected_peak = 0;  // bytes
  std::size_t switches = 0;   // tie-break: fewer switches win
  int tier =
      0;  // pick_for_budget: a higher tier wins before speedup (agent/ranking/target_rank.hpp)
};

// Indices of the non-dominated points (higher speedup, lower peak), ordered by peak. A
// point with a NaN speedup or peak (not paired, or memory not probed) is on no frontier and
// fits no budget.
std::vector<std::size_t> pareto_frontier(const std::vector<FrontierPoint>& points);

// Index of the fastest point of the highest tier with projected_peak <= budget; nullopt
// when none fits.
std::optional<std::size_t> pick_for_budget(const std::vector<FrontierPoint>& points,
                                           double budget_bytes);

}  // namespace sg::agent
