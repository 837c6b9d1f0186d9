// The dashboard's HTTP routing as a pure function of (method, path): embedded assets,
// /api/v1/* JSON, /metrics and /logs/<run>/<stream>. The server (server.cpp) only adapts
// civetweb to it, so every route is testable without a socket. The DB is opened
// read-only for each request: a running campaign keeps writing.
#pragma once
#include <string>
#include <string_view>

namespace sg::agent::dashboard {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string headers;  // extra header lines, each ending in CRLF (e.g. "Allow: GET\r\n")
};

class Router {
 public:
  explicit Router(std::string db_path) : db_path_(std::move(db_path)) {}
  // `path` may carry a query string after '?', or it may be passed apart as `query`.
  HttpResponse handle(std::string_view method, std::string_view path,
                      std::string_view query = {}) const;

 private:
  HttpResponse api(std::string_view path, std::string_view query) const;
  HttpResponse log(std::string_view path) const;
  std::string db_path_;
};

// Last bytes of a log served at /logs/...: enough to see why a run failed.
constexpr std::size_t kMaxLogBytes = 1 << 20;

}  // namespace sg::agent::dashboard
