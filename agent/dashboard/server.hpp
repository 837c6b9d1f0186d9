// `speedgate serve`: one civetweb server (the one prometheus-cpp's pull library uses)
// on one port, adapting HTTP requests to the Router after request_guard.hpp's checks
// (GET/HEAD, Host, no control bytes). Binds 127.0.0.1 unless told otherwise.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace sg::agent::dashboard {

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 8321;  // 0: any free port
};

// Worker threads, and how long one request may take to arrive and be answered: a few
// idle held-open connections take a few workers for at most this long.
constexpr int kWorkers = 32;
constexpr int kRequestTimeoutMs = 10000;

// Parses "HOST:PORT" or "PORT"; throws UsageError naming the bad part.
ListenAddress parse_listen(const std::string& text);

class Server {
 public:
  // Checks the DB exists and opens read-only (throws UsageError / StoreError), then
  // starts listening; throws UsageError naming the port when it cannot be bound.
  // allow_hosts: further names the Host header may carry (host_allowed).
  Server(const std::string& db_path, const ListenAddress& listen,
         const std::vector<std::string>& allow_hosts = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  int port() const;  // the bound port (useful with port 0)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg::agent::dashboard
