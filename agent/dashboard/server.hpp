// `speedgate serve`: one civetweb server (the one prometheus-cpp's pull library uses)
// on one port, adapting HTTP requests to the Router. Binds 127.0.0.1 unless told
// otherwise.
#pragma once
#include <memory>
#include <string>

namespace sg::agent::dashboard {

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 8321;  // 0: any free port
};

// Parses "HOST:PORT" or "PORT"; throws UsageError naming the bad part.
ListenAddress parse_listen(const std::string& text);

class Server {
 public:
  // Checks the DB exists and opens read-only (throws UsageError / StoreError), then
  // starts listening; throws UsageError when the address cannot be bound.
  Server(const std::string& db_path, const ListenAddress& listen);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  int port() const;  // the bound port (useful with port 0)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg::agent::dashboard
