// Which trials a campaign's charts draw when it has more than they can show: the
// server sends at most `max_points` rows of the columnar series (docs/dashboard.md,
// "Sampling"), stratified so nothing a reader looks for disappears:
//   1. every preset's trial (the stars sit on real points);
//   2. the Pareto-frontier trials, up to half of max_points, evenly spread along the
//      projected-peak axis (so the frontier line keeps its shape);
//   3. the rest shared between the dispositions in proportion to their counts (largest
//      remainder), each disposition at least one point, evenly spread over the campaign
//      (trial order) within each disposition.
// A pure function of its input, so it is tested without a DB.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sg::agent::dashboard {

struct SeriesPoint {
  std::string disposition;
  bool on_frontier = false;
  bool preset = false;              // the trial behind one of the campaign's presets
  double projected_peak_bytes = 0;  // orders the frontier; non-finite sorts last
};

// Indices into `points` (trial order), ascending. All of them when max_points is 0 or
// not below points.size(); else exactly max_points of them.
std::vector<std::size_t> sample_series(const std::vector<SeriesPoint>& points,
                                       std::size_t max_points);

}  // namespace sg::agent::dashboard
