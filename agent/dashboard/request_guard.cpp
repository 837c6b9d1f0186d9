#include "agent/dashboard/request_guard.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace sg::agent::dashboard {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, name.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool is_loopback(const std::string& name) {
  return name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// A control byte in the target, as sent or once %-decoded.
bool has_control_byte(std::string_view target) {
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (is_control(static_cast<unsigned char>(target[i]))) return true;
    if (target[i] == '%' && i + 2 < target.size() && hex(target[i + 1]) >= 0 &&
        hex(target[i + 2]) >= 0 &&
        is_control(static_cast<unsigned char>(hex(target[i + 1]) * 16 + hex(target[i + 2])))) {
      return true;
    }
  }
  return false;
}

HttpResponse text(int status, std::string body, std::string headers = {}) {
  HttpResponse r{status, "text/plain; charset=utf-8", std::move(body)};
  r.headers = std::move(headers);
  return r;
}

}  // namespace

bool host_allowed(const HostPolicy& policy, std::string_view host) {
  std::string name;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {  // [v6] or [v6]:port
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = lower(host.substr(1, close - 1));
    const auto rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const auto colon = host.find(':');
    if (colon != std::string_view::npos && host.find(':', colon + 1) != std::string_view::npos)
      return false;
    name = lower(host.substr(0, colon));
    if (colon != std::string_view::npos) port = host.substr(colon + 1);
  }
  if (name.empty()) return false;
  if (!port.empty() && port != std::to_string(policy.port)) return false;
  if (host.back() == ':') return false;  // "name:" with an empty port
  const std::string listen = lower(policy.listen_host);
  if (name == listen) return true;
  for (const auto& a : policy.allowed) {
    if (name == lower(a)) return true;
  }
  if (is_loopback(listen)) return is_loopback(name);
  if (listen == "0.0.0.0" || listen == "::" || listen == "[::]")
    return is_ip_literal(name) || name == "localhost";
  return false;
}

std::optional<HttpResponse> guard_request(const HostPolicy& policy, std::string_view method,
                                          std::string_view http_version, const char* host,
                                          std::string_view raw_target) {
  if (method != "GET" && method != "HEAD") {
    return text(405, "GET and HEAD only\n", "Allow: GET, HEAD\r\n");
  }
  if (host == nullptr) {
    if (http_version != "1.0") return text(400, "a Host header is required\n");
  } else if (!host_allowed(policy, host)) {
    return text(421,
                "this server does not answer for that Host (see speedgate serve --allow-host)\n");
  }
  if (has_control_byte(raw_target)) return text(400, "control bytes in the request path\n");
  return std::nullopt;
}

}  // namespace sg::agent::dashboard
