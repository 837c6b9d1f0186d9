// What a request must be before the router sees it: GET or HEAD, a Host header naming
// this server (DNS rebinding: a page on another site resolving its name to 127.0.0.1
// must not read the campaign), and a path with no control bytes, raw or %-encoded (a
// %00 once cut "/index.html%00.js" to "/index.html").
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/dashboard/router.hpp"

namespace sg::agent::dashboard {

struct HostPolicy {
  std::string listen_host = "127.0.0.1";  // as given to --listen
  int port = 0;                           // the bound port
  std::vector<std::string> allowed;       // --allow-host names (any case)
};

// Whether `host` (the Host header: "name", "name:port", "[v6]:port") names this server:
// the listen address, "localhost" and loopback literals when it listens on loopback,
// any IP literal when it listens on every address, or an allowed name; a port, if
// given, must be the bound one.
bool host_allowed(const HostPolicy& policy, std::string_view host);

// The error answer for a request that may not proceed, or nullopt. `host` is null when
// the request had no Host header (allowed for HTTP/1.0 only); `raw_target` is the
// request target as sent, before any decoding.
std::optional<HttpResponse> guard_request(const HostPolicy& policy, std::string_view method,
                                          std::string_view http_version, const char* host,
                                          std::string_view raw_target);

}  // namespace sg::agent::dashboard
