#include "agent/store/queries/series_sample.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace sg::agent::dashboard {
namespace {

// `room` elements of `list` (room <= list.size()), evenly spread over it.
std::vector<std::size_t> spread(const std::vector<std::size_t>& list, std::size_t room) {
  if (room >= list.size()) return list;
  std::vector<std::size_t> out;
  out.reserve(room);
  const double stride = static_cast<double>(list.size()) / static_cast<double>(room);
  for (std::size_t k = 0; k < room; ++k) out.push_back(list[static_cast<std::size_t>(k * stride)]);
  return out;
}

// How many of each stratum to draw: `room` in all (room < sum of sizes), in proportion
// to the sizes by largest remainder; then every empty-handed stratum, the rarest first,
// takes one point from the stratum furthest above its share (while one has two or more,
// else from the most common stratum with one, when it is more common).
std::vector<std::size_t> quotas(const std::vector<std::size_t>& sizes, std::size_t room) {
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  const std::size_t n = sizes.size();
  std::vector<std::size_t> q(n, 0);
  std::vector<double> exact(n, 0.0);
  std::size_t used = 0;
  for (std::size_t d = 0; d < n; ++d) {
    exact[d] =
        static_cast<double>(room) * static_cast<double>(sizes[d]) / static_cast<double>(total);
    q[d] = static_cast<std::size_t>(std::floor(exact[d]));
    used += q[d];
  }
  while (used < room) {
    std::size_t pick = n;
    for (std::size_t d = 0; d < n; ++d) {
      if (q[d] < sizes[d] && (pick == n || exact[d] - q[d] > exact[pick] - q[pick])) pick = d;
    }
    ++q[pick];
    ++used;
  }
  std::vector<std::size_t> rarest(n);
  std::iota(rarest.begin(), rarest.end(), 0);
  std::stable_sort(rarest.begin(), rarest.end(),
                   [&](auto a, auto b) { return sizes[a] < sizes[b]; });
  for (std::size_t d : rarest) {
    if (q[d] > 0 || sizes[d] == 0) continue;
    std::size_t donor = n;
    for (std::size_t e = 0; e < n; ++e) {
      if (q[e] > 1 && (donor == n || q[e] - exact[e] > q[donor] - exact[donor])) donor = e;
    }
    for (std::size_t e = 0; donor == n && e < n; ++e) {
      if (q[e] == 1 && sizes[e] > sizes[d]) donor = e;
    }
    for (std::size_t e = 0; e < n; ++e) {  // the most common of those with one
      if (donor != n && q[donor] == 1 && q[e] == 1 && sizes[e] > sizes[donor]) donor = e;
    }
    if (donor == n) break;
    --q[donor];
    q[d] = 1;
  }
  return q;
}

}  // namespace

std::vector<std::size_t> sample_series(const std::vector<SeriesPoint>& points,
                                       std::size_t max_points) {
  std::vector<std::size_t> all(points.size());
  std::iota(all.begin(), all.end(), 0);
  if (max_points == 0 || points.size() <= max_points) return all;

  std::vector<std::size_t> chosen, frontier;
  for (std::size_t i = 0; i < points.size() && chosen.size() < max_points; ++i) {
    if (points[i].preset) chosen.push_back(i);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].on_frontier && !points[i].preset) frontier.push_back(i);
  }
  const auto peak = [&](std::size_t i) {
    const double p = points[i].projected_peak_bytes;
    return std::isfinite(p) ? p : HUGE_VAL;
  };
  std::stable_sort(frontier.begin(), frontier.end(),
                   [&](auto a, auto b) { return peak(a) < peak(b); });
  const std::size_t frontier_room =
      max_points / 2 > chosen.size() ? max_points / 2 - chosen.size() : 0;
  for (std::size_t i : spread(frontier, frontier_room)) chosen.push_back(i);

  std::vector<bool> taken(points.size(), false);
  for (std::size_t i : chosen) taken[i] = true;
  std::map<std::string, std::size_t> stratum_of;
  std::vector<std::vector<std::size_t>> strata;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (taken[i]) continue;
    const auto [it, fresh] = stratum_of.emplace(points[i].disposition, strata.size());
    if (fresh) strata.emplace_back();
    strata[it->second].push_back(i);
  }
  std::vector<std::size_t> sizes;
  for (const auto& s : strata) sizes.push_back(s.size());
  const auto q = quotas(sizes, max_points - chosen.size());
  for (std::size_t d = 0; d < strata.size(); ++d) {
    for (std::size_t i : spread(strata[d], q[d])) chosen.push_back(i);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace sg::agent::dashboard
