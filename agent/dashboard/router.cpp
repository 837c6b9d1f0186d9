#include "agent/dashboard/router.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/dashboard/assets.hpp"
#include "agent/dashboard/metrics.hpp"
#include "agent/dashboard/run_log.hpp"
#include "agent/report/summary.hpp"
#include "agent/store/queries/dashboard_queries.hpp"
#include "agent/store/queries/evidence.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

HttpResponse not_found() { return {404, "text/plain; charset=utf-8", "not found\n"}; }

HttpResponse json_response(const json& body) {
  // error_handler::replace: invalid UTF-8 from a log or config never breaks the response.
  return {200, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

std::optional<std::int64_t> parse_id(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The decoded value of `name` in an application/x-www-form-urlencoded query; "" if absent.
std::string query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name)
      return eq == std::string_view::npos ? "" : url_decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

HttpResponse bad_request(const char* why) { return {400, "text/plain; charset=utf-8", why}; }

// `body` with the campaign's id added.
HttpResponse campaign_json(std::int64_t id, json body) {
  body["campaign_id"] = id;
  return json_response(body);
}

// The long arrays are JSON text from SQLite; wrap them without re-parsing.
HttpResponse wrap_array(const std::string& key, const std::string& array, const json& extra) {
  std::string body = extra.dump(-1, ' ', false, json::error_handler_t::replace);
  body.pop_back();  // '}'
  if (body.size() > 1) body += ",";
  return HttpResponse{200, "application/json", body + "\"" + key + "\":" + array + "}"};
}

// /api/v1/campaigns/<id>/evaluations: every evaluation, or with a query one filtered,
// sorted page of them.
HttpResponse campaign_evaluations(Store& store, std::int64_t id, std::string_view query) {
  if (query.empty()) {
    return wrap_array("evaluations", campaign_trials(store, id),
                      {{"campaign_id", id}, {"budgets", campaign_budgets(store, id)}});
  }
  TrialPage page;
  page.disposition = query_param(query, "disposition");
  page.text = query_param(query, "q");
  page.sort = query_param(query, "sort");
  if (!sort_column(page.sort)) return bad_request("sort: unknown column\n");
  const std::string dir = query_param(query, "dir");
  if (dir != "" && dir != "asc" && dir != "desc") return bad_request("dir must be asc or desc\n");
  page.descending = dir == "desc";
  page.offset = parse_id(query_param(query, "offset")).value_or(0);
  page.limit = std::min<std::int64_t>(parse_id(query_param(query, "limit")).value_or(200), 5000);
  return campaign_json(id, campaign_trial_page(store, id, page));
}

// /api/v1/campaigns/<id>/series, sampled to max_points (0 = every point).
HttpResponse campaign_series_response(Store& store, std::int64_t id, std::string_view query) {
  const std::string max_points = query_param(query, "max_points");
  const auto points =
      max_points.empty() ? std::optional<std::int64_t>(kDefaultSeriesPoints) : parse_id(max_points);
  if (!points) return bad_request("max_points must be a whole number >= 0\n");
  json body = campaign_series(store, id, static_cast<std::size_t>(*points));
  body["budgets"] = campaign_budgets(store, id);
  return campaign_json(id, std::move(body));
}

// /api/v1/campaigns/<id>/<what> for a campaign that exists.
HttpResponse campaign_api(Store& store, std::int64_t id, std::string_view what,
                          std::string_view query) {
  // "trials" is the former name of "evaluations", kept so old links still answer.
  if (what == "evaluations" || what == "trials") return campaign_evaluations(store, id, query);
  if (what == "series") return campaign_series_response(store, id, query);
  if (what == "frontier")
    return wrap_array("frontier", campaign_frontier(store, id), json::object());
  if (what == "projections")
    return wrap_array("projections", campaign_projections(store, id), json::object());
  if (what == "switches") return campaign_json(id, {{"switches", switch_effects(store, id)}});
  if (what == "gate") return campaign_json(id, campaign_gate(store, id));
  if (what == "presets") return campaign_json(id, {{"presets", campaign_presets(store, id)}});
  if (what == "finals") return campaign_json(id, {{"finals", campaign_finals(store, id)}});
  return not_found();
}

}  // namespace

HttpResponse Router::handle(std::string_view method, std::string_view path,
                            std::string_view query) const {
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "GET and HEAD only\n", "Allow: GET, HEAD\r\n"};
  }
  if (const auto q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  try {
    if (path == "/metrics") {
      Store store(db_path_, /*read_only=*/true);
      return {200, kMetricsContentType, render_metrics(store)};
    }
    if (path.rfind("/api/", 0) == 0) return api(path, query);
    if (path.rfind("/logs/", 0) == 0) return log(path);
  } catch (const std::exception& e) {
    return {500, "text/plain; charset=utf-8", std::string("error: ") + e.what() + "\n"};
  }
  if (const Asset* asset = find_asset(path)) {
    return {200, std::string(asset->content_type), std::string(asset->bytes)};
  }
  return not_found();
}

HttpResponse Router::api(std::string_view path, std::string_view query) const {
  const auto parts = split_path(path);  // api, v1, ...
  if (parts.size() < 3 || parts[1] != "v1") return not_found();
  Store store(db_path_, /*read_only=*/true);
  if (parts.size() == 3 && parts[2] == "campaigns")
    return json_response({{"campaigns", campaigns(store)}});
  if (parts.size() == 3 && parts[2] == "presets")
    return json_response({{"presets", presets(store)}});
  if (parts.size() == 4 && parts[2] == "series" && parts[3] == "presets") {
    return json_response({{"series", preset_series(store)}});
  }
  if (parts.size() == 5 && parts[2] == "evaluations" && parts[4] == "evidence") {
    const auto id = parse_id(parts[3]);
    const auto e = id ? evaluation_evidence(store, *id) : std::nullopt;
    return e ? json_response(*e) : not_found();
  }
  if (parts.size() == 4 && parts[2] == "runs") {
    const auto id = parse_id(parts[3]);
    const auto r = id ? run(store, *id) : std::nullopt;
    return r ? json_response(*r) : not_found();
  }
  if (parts.size() == 5 && parts[2] == "campaigns") {
    // "newest": the campaign the page shows first, so it need not wait for the list.
    const auto id = parts[3] == "newest" ? newest_campaign(store) : parse_id(parts[3]);
    if (!id || !campaign_exists(store, *id)) return not_found();
    return campaign_api(store, *id, parts[4], query);
  }
  return not_found();
}

HttpResponse Router::log(std::string_view path) const {
  // /logs/<run id>/<stdout|stderr>: the file named in the DB for that run, read only
  // where run_log.hpp allows (no links, regular files in the run's own directory).
  const auto parts = split_path(path);
  if (parts.size() != 3) return not_found();
  const auto id = parse_id(parts[1]);
  if (!id) return not_found();
  Store store(db_path_, /*read_only=*/true);
  const auto stored = run_log(store, *id, std::string(parts[2]));
  if (!stored) return not_found();
  for (const auto& where : log_locations(db_path_, stored->path)) {
    bool owned = false;
    for (const auto& [campaign, run] : stored->owners)
      owned |= campaign == where.campaign_id && run == where.run_id;
    if (!owned) continue;
    if (auto body = read_log_tail(where, kMaxLogBytes))
      return {200, "text/plain; charset=utf-8", std::move(*body)};
  }
  return not_found();
}

}  // namespace sg::agent::dashboard
