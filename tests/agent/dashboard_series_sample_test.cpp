// The server-side sample of a campaign's chart series (agent/store/queries/series_sample.cpp):
// at most max_points trials, every preset's and (up to half the room) every frontier
// trial kept, every disposition present and the rest shared by their counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "agent/store/queries/series_sample.hpp"

namespace sg::agent::dashboard {
namespace {

std::vector<SeriesPoint> campaign(const std::vector<std::pair<std::string, int>>& counts) {
  std::vector<SeriesPoint> points;
  std::size_t longest = 0;
  for (const auto& [d, n] : counts) longest = std::max<std::size_t>(longest, n);
  // Interleaved, as a search produces them: disposition k's j-th trial at round j.
  for (std::size_t j = 0; j < longest; ++j) {
    for (const auto& [d, n] : counts) {
      if (static_cast<int>(j) >= n) continue;
      SeriesPoint p;
      p.disposition = d;
      p.projected_peak_bytes = static_cast<double>(points.size());
      points.push_back(p);
    }
  }
  return points;
}

std::map<std::string, int> by_disposition(const std::vector<SeriesPoint>& points,
                                          const std::vector<std::size_t>& chosen) {
  std::map<std::string, int> out;
  for (std::size_t i : chosen) ++out[points[i].disposition];
  return out;
}

TEST(DashboardSeriesSample, EveryTrialWhenTheyFitOrWhenMaxPointsIsZero) {
  const auto points = campaign({{"accepted", 20}, {"oom", 10}});
  for (std::size_t max_points : {0u, 30u, 1000u}) {
    const auto chosen = sample_series(points, max_points);
    ASSERT_EQ(chosen.size(), 30u) << max_points;
    for (std::size_t i = 0; i < chosen.size(); ++i) EXPECT_EQ(chosen[i], i);
  }
}

TEST(DashboardSeriesSample, ExactlyMaxPointsAscendingAndDistinct) {
  const auto points = campaign({{"accepted", 3333},
                                {"gate_failed", 1667},
                                {"slower", 1667},
                                {"pruned", 1667},
                                {"oom", 1666}});
  const auto chosen = sample_series(points, 1000);
  ASSERT_EQ(chosen.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(chosen.begin(), chosen.end()));
  EXPECT_EQ(std::set<std::size_t>(chosen.begin(), chosen.end()).size(), 1000u);
  EXPECT_LT(chosen.back(), points.size());
}

TEST(DashboardSeriesSample, DispositionsKeepTheirShareAndARareOneIsStillThere) {
  auto points = campaign(
      {{"accepted", 6000}, {"gate_failed", 2000}, {"oom", 1997}, {"crash", 1}, {"nan", 2}});
  const auto counts = by_disposition(points, sample_series(points, 1000));
  EXPECT_EQ(counts.at("crash"), 1);
  EXPECT_EQ(counts.at("nan"), 1);
  // 998 left for 9,997 trials: each share within one point of its proportion.
  const double room = 998, rest = 9997;
  EXPECT_NEAR(counts.at("accepted"), room * 6000 / rest, 1.0);
  EXPECT_NEAR(counts.at("gate_failed"), room * 2000 / rest, 1.0);
  EXPECT_NEAR(counts.at("oom"), room * 1997 / rest, 1.0);
}

TEST(DashboardSeriesSample, EachDispositionIsSpreadOverTheCampaign) {
  const auto points = campaign({{"accepted", 5000}, {"oom", 5000}});
  const auto chosen = sample_series(points, 100);
  std::vector<std::size_t> oom;
  for (std::size_t i : chosen) {
    if (points[i].disposition == "oom") oom.push_back(i);
  }
  ASSERT_EQ(oom.size(), 50u);
  EXPECT_LT(oom.front(), 200u);                // from the start of the campaign ...
  EXPECT_GT(oom.back(), points.size() - 300);  // ... to its end
}

TEST(DashboardSeriesSample, PresetAndFrontierTrialsAreAlwaysKept) {
  auto points = campaign({{"accepted", 5000}, {"slower", 5000}});
  std::set<std::size_t> frontier, presets = {17, 4242, 9999};
  for (std::size_t i = 3; i < points.size(); i += 97) frontier.insert(i);  // 104 trials
  for (std::size_t i : frontier) points[i].on_frontier = true;
  for (std::size_t i : presets) points[i].preset = true;
  const auto chosen = sample_series(points, 1000);
  ASSERT_EQ(chosen.size(), 1000u);
  const std::set<std::size_t> got(chosen.begin(), chosen.end());
  for (std::size_t i : frontier) EXPECT_TRUE(got.count(i)) << "frontier trial " << i;
  for (std::size_t i : presets) EXPECT_TRUE(got.count(i)) << "preset trial " << i;
  EXPECT_EQ(by_disposition(points, chosen).size(), 2u);
}

TEST(DashboardSeriesSample, AFrontierLargerThanHalfIsSpreadAlongProjectedPeak) {
  auto points = campaign({{"accepted", 10000}});
  for (std::size_t i = 0; i < points.size(); i += 5) {  // 2,000 frontier trials, peaks shuffled
    points[i].on_frontier = true;
    points[i].projected_peak_bytes = static_cast<double>((i * 7919) % points.size());
  }
  points[5].projected_peak_bytes = NAN;  // sorts last, never breaks the order
  std::vector<double> frontier_peaks;
  for (const auto& p : points) {
    if (p.on_frontier && std::isfinite(p.projected_peak_bytes))
      frontier_peaks.push_back(p.projected_peak_bytes);
  }
  std::sort(frontier_peaks.begin(), frontier_peaks.end());
  const auto chosen = sample_series(points, 1000);
  ASSERT_EQ(chosen.size(), 1000u);
  std::vector<double> peaks;
  for (std::size_t i : chosen) {
    if (points[i].on_frontier && std::isfinite(points[i].projected_peak_bytes))
      peaks.push_back(points[i].projected_peak_bytes);
  }
  std::sort(peaks.begin(), peaks.end());
  ASSERT_GE(peaks.size(), 499u);
  EXPECT_EQ(peaks.front(), frontier_peaks.front());                     // its low end ...
  EXPECT_GE(peaks.back(), frontier_peaks[frontier_peaks.size() - 10]);  // ... and its high end
}

TEST(DashboardSeriesSample, FewerPointsThanDispositionsKeepsTheRarest) {
  const auto points = campaign({{"accepted", 50}, {"oom", 30}, {"crash", 2}, {"nan", 1}});
  const auto counts = by_disposition(points, sample_series(points, 2));
  EXPECT_EQ(counts, (std::map<std::string, int>{{"crash", 1}, {"nan", 1}}));
}

}  // namespace
}  // namespace sg::agent::dashboard
