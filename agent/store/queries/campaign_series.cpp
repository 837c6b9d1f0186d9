// What the dashboard's charts draw (dashboard_queries.hpp, campaign_series).
#include <cmath>
#include <vector>

#include "agent/store/connection.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/queries/query_sql.hpp"
#include "agent/store/queries/series_sample.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

// One evaluation as the charts see it: its values as JSON (null where there is nothing
// to draw) and what the sampling weighs.
struct SeriesRow {
  json id, speedup, samples, projected, measured, on_frontier;
  SeriesPoint point;
};

std::vector<SeriesRow> series_rows(SQLite::Database& db, std::int64_t campaign_id) {
  return query_all(
      db,
      "SELECT v.id, v.disposition, " + finite("v.speedup") + ", " + finite("v.samples_per_s") +
          ", " + finite("v.projected_peak_bytes") +
          ", (SELECT MAX(t.peak_allocated_bytes) FROM "
          "json_each(v.trial_ids_json) j JOIN trials t ON t.id = j.value), v.on_frontier, "
          "v.id IN (SELECT evaluation_id FROM presets WHERE campaign_id = ?1) "
          "FROM evaluations v WHERE v.campaign_id = ?1 ORDER BY v.id",
      [](SQLite::Statement& q) {
        SeriesRow r{value(q.getColumn(0)), value(q.getColumn(2)), value(q.getColumn(3)),
                    value(q.getColumn(4)), value(q.getColumn(5)), value(q.getColumn(6)),
                    SeriesPoint{}};
        r.point.disposition = q.getColumn(1).getString();
        r.point.on_frontier = q.getColumn(6).getInt() != 0;
        r.point.preset = q.getColumn(7).getInt() != 0;
        r.point.projected_peak_bytes = r.projected.is_number() ? r.projected.get<double>() : NAN;
        return r;
      },
      campaign_id);
}

// Per chart, the evaluations with a value to draw.
json totals(const std::vector<SeriesRow>& rows) {
  std::int64_t speedup = 0, throughput = 0, frontier = 0, memory = 0;
  for (const auto& r : rows) {
    speedup += !r.speedup.is_null();
    throughput += !r.samples.is_null();
    frontier += !r.samples.is_null() && !r.projected.is_null();
    memory += !r.measured.is_null() && !r.projected.is_null();
  }
  return {
      {"speedup", speedup}, {"throughput", throughput}, {"frontier", frontier}, {"memory", memory}};
}

json dispositions(const std::vector<SeriesRow>& rows) {
  json out = json::object();
  for (const auto& r : rows) {
    out[r.point.disposition] = out.value(r.point.disposition, 0) + 1;
  }
  return out;
}

// Best accepted speedup so far, over every evaluation (not the sample): one point where
// it rises, and one at the last evaluation so the line reaches the end.
json best_so_far(const std::vector<SeriesRow>& rows) {
  json best = {{"index", json::array()}, {"speedup", json::array()}};
  double best_value = -1;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& s = rows[i].speedup;
    if (rows[i].point.disposition == "accepted" && s.is_number() && s.get<double>() > best_value) {
      best_value = s.get<double>();
      best["index"].push_back(i + 1);
      best["speedup"].push_back(best_value);
    }
  }
  if (best_value > 0 && best["index"].back().get<std::size_t>() != rows.size()) {
    best["index"].push_back(rows.size());
    best["speedup"].push_back(best_value);
  }
  return best;
}

// The sampled evaluations as columns (index is 1-based over every evaluation).
json sampled_columns(const std::vector<SeriesRow>& rows, std::size_t max_points) {
  std::vector<SeriesPoint> points;
  for (const auto& r : rows) points.push_back(r.point);
  json series = {{"index", json::array()},
                 {"id", json::array()},
                 {"disposition", json::array()},
                 {"speedup", json::array()},
                 {"samples_per_s", json::array()},
                 {"projected_peak_bytes", json::array()},
                 {"measured_peak_bytes", json::array()},
                 {"on_frontier", json::array()},
                 {"preset", json::array()}};
  for (std::size_t i : sample_series(points, max_points)) {
    const SeriesRow& r = rows[i];
    series["index"].push_back(i + 1);
    series["id"].push_back(r.id);
    series["disposition"].push_back(r.point.disposition);
    series["speedup"].push_back(r.speedup);
    series["samples_per_s"].push_back(r.samples);
    series["projected_peak_bytes"].push_back(r.projected);
    series["measured_peak_bytes"].push_back(r.measured);
    series["on_frontier"].push_back(r.on_frontier);
    series["preset"].push_back(r.point.preset ? 1 : 0);
  }
  return series;
}

}  // namespace

json campaign_series(Store& store, std::int64_t campaign_id, std::size_t max_points) {
  const std::vector<SeriesRow> rows = series_rows(store_detail::connection(store), campaign_id);
  return {{"evaluations", rows.size()},
          {"max_points", max_points},
          {"dispositions", dispositions(rows)},
          {"best_so_far", best_so_far(rows)},
          {"totals", totals(rows)},
          {"series", sampled_columns(rows, max_points)}};
}

}  // namespace sg::agent::dashboard
