// /metrics: the store's state in Prometheus text format (0.0.4), built fresh on every
// scrape through prometheus-cpp (Registry + TextSerializer). Names carry the
// `speedgate_` prefix and base units (bytes, seconds, ratios).
#pragma once
#include <string>

#include "agent/store/store.hpp"

namespace sg::agent::dashboard {

constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_metrics(Store& store);

}  // namespace sg::agent::dashboard
