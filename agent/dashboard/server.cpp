#include "agent/dashboard/server.hpp"

#include <CivetServer.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "agent/common/errors.hpp"
#include "agent/dashboard/request_guard.hpp"
#include "agent/dashboard/router.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::dashboard {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 421:
      return "Misdirected Request";
    default:
      return "Internal Server Error";
  }
}

void send(mg_connection* conn, const HttpResponse& r, bool head, bool is_static) {
  // Embedded static files change only with the binary: let the browser keep them (and
  // its compiled Chart.js). Data is never cached.
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: %s\r\nX-Content-Type-Options: nosniff\r\n%s"
            "Connection: close\r\n\r\n",
            r.status, reason_phrase(r.status), r.content_type.c_str(), r.body.size(),
            is_static ? "public, max-age=3600" : "no-store", r.headers.c_str());
  if (!head) mg_write(conn, r.body.data(), r.body.size());
}

class RouterHandler : public CivetHandler {
 public:
  explicit RouterHandler(const Router& router) : router_(router) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return serve(conn, /*head=*/false); }
  bool handleHead(CivetServer*, mg_connection* conn) override { return serve(conn, /*head=*/true); }

 private:
  bool serve(mg_connection* conn, bool head) {
    const mg_request_info* info = mg_get_request_info(conn);
    // local_uri: civetweb's dot-segment-cleaned path, still %-encoded (decode_url off);
    // the router serves only exact embedded paths and API routes, so whatever a traversal
    // cleans up to is one of those or a 404. Control bytes never get here (guard_request).
    const char* uri = info->local_uri != nullptr ? info->local_uri : "/";
    const char* query = info->query_string != nullptr ? info->query_string : "";
    const HttpResponse r = router_.handle(head ? "HEAD" : "GET", uri, query);
    send(conn, r, head, r.status == 200 && std::string_view(uri).rfind("/static/", 0) == 0);
    return true;
  }
  const Router& router_;
};

// Runs before any handler, for every method: answers what may not proceed.
int begin_request(mg_connection* conn) {
  const auto* server = static_cast<const CivetServer*>(mg_get_user_data(mg_get_context(conn)));
  const auto* policy = static_cast<const HostPolicy*>(server->getUserContext());
  const mg_request_info* info = mg_get_request_info(conn);
  const char* method = info->request_method != nullptr ? info->request_method : "";
  // The path as sent (decode_url is off) and the query string (never decoded).
  std::string target = info->local_uri_raw != nullptr ? info->local_uri_raw
                       : info->request_uri != nullptr ? info->request_uri
                                                      : "";
  if (info->query_string != nullptr) target += std::string("?") + info->query_string;
  const auto refusal =
      guard_request(*policy, method, info->http_version != nullptr ? info->http_version : "",
                    mg_get_header(conn, "Host"), target);
  if (!refusal) return 0;
  send(conn, *refusal, std::string_view(method) == "HEAD", false);
  return refusal->status;
}

// A clear error for a port another process holds, before civetweb's own message
// ("null context when constructing CivetServer").
void check_port_free(const ListenAddress& listen) {
  if (listen.port == 0) return;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string host = listen.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (::getaddrinfo(host.c_str(), std::to_string(listen.port).c_str(), &hints, &found) != 0) {
    throw UsageError("--listen host '" + listen.host + "' is not an address of this machine");
  }
  const int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  int err = 0;
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (err == EADDRINUSE) {
    throw UsageError(
        "port " + std::to_string(listen.port) + " on " + listen.host +
        " is in use (another speedgate serve?); choose another with --port N, or --port 0 "
        "for any free port");
  }
  if (err != 0) {
    throw UsageError("cannot listen on " + listen.host + ":" + std::to_string(listen.port) + ": " +
                     std::strerror(err));
  }
}

}  // namespace

ListenAddress parse_listen(const std::string& text) {
  ListenAddress out;
  std::string port = text;
  if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (out.host.empty()) throw UsageError("--listen '" + text + "': empty host");
  }
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5 || std::stoi(port) > 65535) {
    throw UsageError("--listen '" + text + "': port must be a number 0-65535");
  }
  out.port = std::stoi(port);
  return out;
}

struct Server::Impl {
  Router router;
  RouterHandler handler;
  HostPolicy policy;
  CivetCallbacks callbacks;
  std::unique_ptr<CivetServer> server;
  explicit Impl(const std::string& db) : router(db), handler(router) {}
};

Server::Server(const std::string& db_path, const ListenAddress& listen,
               const std::vector<std::string>& allow_hosts) {
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("--db '" + db_path + "': no such database (serve never creates one)");
  }
  { Store check(db_path, /*read_only=*/true); }  // refuses newer schemas, bad files
  check_port_free(listen);
  impl_ = std::make_unique<Impl>(db_path);
  impl_->policy.listen_host = listen.host;
  impl_->policy.allowed = allow_hosts;
  impl_->callbacks.begin_request = begin_request;
  const std::string ports = listen.host + ":" + std::to_string(listen.port);
  // Each connection holds a worker until answered or timed out: kWorkers idle sockets
  // (a browser's pre-opened connections, a slow client) can no longer stop it answering.
  const std::vector<std::string> options = {
      "listening_ports", ports, "num_threads", std::to_string(kWorkers), "request_timeout_ms",
      std::to_string(kRequestTimeoutMs), "enable_keep_alive", "no",
      // Paths stay %-encoded: civetweb would decode them in place before begin_request
      // sees them, and a decoded %00 cuts the string ("/index.html%00.js" became
      // "/index.html"). No route needs an encoded character.
      "decode_url", "no", "enable_directory_listing", "no"};
  try {
    impl_->server = std::make_unique<CivetServer>(options, &impl_->callbacks, &impl_->policy);
  } catch (const CivetException& e) {
    throw UsageError("cannot listen on " + ports +
                     " (port in use, or not an address of this machine)");
  }
  impl_->policy.port = port();
  impl_->server->addHandler("/", impl_->handler);
}

Server::~Server() {
  if (impl_ && impl_->server) impl_->server->close();
}

int Server::port() const {
  const auto ports = impl_->server->getListeningPorts();
  return ports.empty() ? -1 : ports.front();
}

}  // namespace sg::agent::dashboard
