// A minimal blocking HTTP/1.1 client over a loopback TCP socket, for dashboard tests and
// benchmarks (no client library needed; the server closes each connection).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace sg::bench {

struct HttpReply {
  int status = 0;  // 0: no connection / no reply
  std::string headers, body;
};

// A socket connected to 127.0.0.1:`port`, or -1. With timeout_s > 0 its reads give up
// after that long (a bound, not a measurement: a server that never answers fails a test
// instead of hanging it); 0 waits as long as it takes.
inline int connect_loopback(int port, int timeout_s = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (timeout_s > 0) {
    timeval tv{timeout_s, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` verbatim (so tests can send malformed ones) and reads the reply until
// the server closes the connection.
inline HttpReply http_exchange(int port, const std::string& request, int timeout_s = 0) {
  HttpReply reply;
  const int fd = connect_loopback(port, timeout_s);
  if (fd < 0) return reply;
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string data;
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) data.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const auto end = data.find("\r\n\r\n");
  if (data.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return reply;
  reply.status = std::stoi(data.substr(9, 3));
  reply.headers = data.substr(0, end);
  reply.body = data.substr(end + 4);
  return reply;
}

// Sends `raw_target` verbatim as the request target (so tests can send "/../x").
inline HttpReply http_get(int port, const std::string& raw_target,
                          const std::string& method = "GET") {
  return http_exchange(port, method + " " + raw_target +
                                 " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

}  // namespace sg::bench
