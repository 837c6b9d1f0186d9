#include "agent/dashboard/server.hpp"

#include <CivetServer.h>

#include <filesystem>
#include <string_view>
#include <vector>

#include "agent/common/errors.hpp"
#include "agent/dashboard/router.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::dashboard {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Internal Server Error";
  }
}

class RouterHandler : public CivetHandler {
 public:
  explicit RouterHandler(const Router& router) : router_(router) {}
  bool handleGet(CivetServer*, mg_connection* conn) override { return serve(conn, /*head=*/false); }
  bool handleHead(CivetServer*, mg_connection* conn) override { return serve(conn, /*head=*/true); }

 private:
  bool serve(mg_connection* conn, bool head) {
    const mg_request_info* info = mg_get_request_info(conn);
    // local_uri: civetweb's decoded, dot-segment-cleaned path; the router serves only
    // exact embedded paths and API routes, so whatever a traversal cleans up to either
    // is one of those or is a 404.
    const char* uri = info->local_uri != nullptr ? info->local_uri : "/";
    const char* query = info->query_string != nullptr ? info->query_string : "";
    const HttpResponse r = router_.handle(head ? "HEAD" : "GET", uri, query);
    // Embedded static files change only with the binary: let the browser keep them (and
    // its compiled Chart.js). Data is never cached.
    const bool is_static = r.status == 200 && std::string_view(uri).rfind("/static/", 0) == 0;
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
              "Cache-Control: %s\r\nX-Content-Type-Options: nosniff\r\n"
              "Connection: close\r\n\r\n",
              r.status, reason_phrase(r.status), r.content_type.c_str(), r.body.size(),
              is_static ? "public, max-age=3600" : "no-store");
    if (!head) mg_write(conn, r.body.data(), r.body.size());
    return true;
  }
  const Router& router_;
};

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
  std::unique_ptr<CivetServer> server;
  explicit Impl(const std::string& db) : router(db), handler(router) {}
};

Server::Server(const std::string& db_path, const ListenAddress& listen) {
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("--db '" + db_path + "': no such database (serve never creates one)");
  }
  { Store check(db_path, /*read_only=*/true); }  // refuses newer schemas, bad files
  impl_ = std::make_unique<Impl>(db_path);
  const std::string ports = listen.host + ":" + std::to_string(listen.port);
  const std::vector<std::string> options = {"listening_ports", ports, "num_threads", "8",
                                            "enable_directory_listing", "no"};
  try {
    impl_->server = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    throw UsageError("--listen '" + ports + "': cannot serve there (" + e.what() + ")");
  }
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
