#include "agent/ranking/pareto.hpp"

#include <algorithm>
#include <cmath>

namespace sg::agent {

std::vector<std::size_t> pareto_frontier(const std::vector<FrontierPoint>& points) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    // Memory not probed, or speed not paired (prune's drops): no place on it.
    if (std::isnan(points[i].projected_peak) || std::isnan(points[i].speedup)) continue;
    bool dominated = false;
    for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
      if (i == j) continue;
      const auto &a = points[j], &b = points[i];
      bool no_worse = a.speedup >= b.speedup && a.projected_peak <= b.projected_peak;
      bool better = a.speedup > b.speedup || a.projected_peak < b.projected_peak ||
                    (a.speedup == b.speedup && a.projected_peak == b.projected_peak &&
                     (a.switches < b.switches || (a.switches == b.switches && j < i)));
      dominated = no_worse && better;
    }
    if (!dominated) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [&](std::size_t x, std::size_t y) {
    return points[x].projected_peak < points[y].projected_peak;
  });
  return out;
}

std::optional<std::size_t> pick_for_budget(const std::vector<FrontierPoint>& points,
                                           double budget_bytes) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (!(p.projected_peak <= budget_bytes) || std::isnan(p.speedup)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = points[*best];
    if (p.tier != b.tier) {
      if (p.tier > b.tier) best = i;
    } else if (p.speedup > b.speedup || (p.speedup == b.speedup && p.switches < b.switches)) {
      best = i;
    }
  }
  return best;
}

}  // namespace sg::agent
