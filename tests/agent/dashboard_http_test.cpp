// The served dashboard refuses what issue 31 found it answering: foreign Host headers
// (DNS rebinding), other methods, control bytes in paths, starvation by idle held-open
// connections; `serve --port` and a clear error for a port in use. Every wait is bounded
// by a socket timeout; nothing asserts on durations.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "agent/dashboard/server.hpp"
#include "agent/store/fixtures/synthetic_store.hpp"
#include "benchmarks/http_get.hpp"
#include "dashboard_support.hpp"
#include "test_util.hpp"

namespace sg::agent::dashboard {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

// Reads give up after this long: a server that never answers fails the test instead of
// hanging it.
constexpr int kTimeoutS = 30;

bench::HttpReply send_raw(int port, const std::string& request) {
  return bench::http_exchange(port, request, kTimeoutS);
}

bench::HttpReply request(int port, const std::string& method, const std::string& target,
                         const std::string& host) {
  return send_raw(
      port, method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
}

class DashboardHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::make_temp_dir("dash-http");
    db_ = dir_ + "/sg.db";
    bench::SyntheticStoreSpec spec;
    spec.campaigns = 1;
    spec.evaluations_per_campaign = 10;
    bench::write_synthetic_store(db_, spec);
    server_ = std::make_unique<Server>(db_, ListenAddress{"127.0.0.1", 0},
                                       std::vector<std::string>{"dash.lan"});
    port_ = server_->port();
    host_ = "127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  std::string dir_, db_, host_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(DashboardHttpTest, AnswersOnlyForItsOwnHostNames) {
  EXPECT_EQ(request(port_, "GET", "/api/v1/campaigns", host_).status, 200);
  EXPECT_EQ(request(port_, "GET", "/api/v1/campaigns", "localhost:" + std::to_string(port_)).status,
            200);
  EXPECT_EQ(request(port_, "GET", "/api/v1/campaigns", "dash.lan").status, 200);  // --allow-host
  const auto foreign = request(port_, "GET", "/api/v1/campaigns",
                               "rebind.attacker.example:" + std::to_string(port_));
  EXPECT_EQ(foreign.status, 421) << foreign.headers;
  EXPECT_EQ(foreign.body.find("campaigns"), std::string::npos);
  EXPECT_EQ(send_raw(port_, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n").status, 400);  // no Host
}

TEST_F(DashboardHttpTest, OtherMethodsAre405WithAllow) {
  for (const char* m : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
    const auto r = request(port_, m, "/api/v1/campaigns", host_);
    EXPECT_EQ(r.status, 405) << m;
    EXPECT_NE(r.headers.find("Allow: GET, HEAD"), std::string::npos) << m << "\n" << r.headers;
  }
  EXPECT_EQ(request(port_, "HEAD", "/", host_).status, 200);
}

TEST_F(DashboardHttpTest, ControlBytesInThePathAre400) {
  for (const char* target :
       {"/index.html%00.js", "/static/app.js%00", "/%0d%0aX-Injected:%201", "/logs/1/stdout%00"}) {
    const auto r = request(port_, "GET", target, host_);
    EXPECT_EQ(r.status, 400) << target << "\n" << r.headers;
    EXPECT_EQ(r.body.find("<html"), std::string::npos) << target;
  }
  EXPECT_EQ(request(port_, "GET", "/index.html", host_).status, 200);
}

// Eight connections that sent half a request and wait: the ninth client is answered
// while all eight are still held open (so not because the server gave up on them).
TEST_F(DashboardHttpTest, IdleHeldOpenConnectionsDoNotStarveIt) {
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) {
    const int fd = bench::connect_loopback(port_, kTimeoutS);
    ASSERT_GE(fd, 0);
    const std::string partial = "GET / HTTP/1.1\r\nHost: " + host_ + "\r\n";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    held.push_back(fd);
  }
  const auto r = request(port_, "GET", "/api/v1/campaigns", host_);
  EXPECT_EQ(r.status, 200);
  for (const int fd : held) {
    // Still waiting for the rest of its request: nothing to read, no end of stream (a
    // server that gave up would have answered it, e.g. 408, or closed it).
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "a held connection was already answered or closed: the "
                                      "answer may have waited for its timeout";
    ::close(fd);
  }
}

TEST_F(DashboardHttpTest, ServePortOptionAndAPortInUse) {
  // In use: the in-process server holds port_.
  const auto busy =
      test::run_speedgate({"serve", "--db", db_, "--port", std::to_string(port_)}, dir_);
  EXPECT_EQ(busy.code, 2) << busy.err;
  EXPECT_NE(busy.err.find("port " + std::to_string(port_)), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find("in use"), std::string::npos) << busy.err;
  EXPECT_EQ(busy.err.find("null context"), std::string::npos) << busy.err;
  const auto bad = test::run_speedgate({"serve", "--db", db_, "--port", "70000"}, dir_);
  EXPECT_EQ(bad.code, 2) << bad.err;

  // --port overrides the port of --listen; stop it with SIGTERM once it printed its URL.
  const int free = test::free_port();
  bp::ipstream out;
  bp::child serve(test::speedgate_bin(), "serve", "--db", db_, "--listen", "127.0.0.1:1", "--port",
                  std::to_string(free), bp::std_out > out, bp::std_err > bp::null);
  std::string url;
  std::getline(out, url);
  EXPECT_EQ(url, "http://127.0.0.1:" + std::to_string(free) + "/");
  EXPECT_EQ(request(free, "GET", "/metrics", "127.0.0.1:" + std::to_string(free)).status, 200);
  ::kill(serve.id(), SIGTERM);
  serve.wait();
  EXPECT_EQ(serve.exit_code(), 0);
}

}  // namespace
}  // namespace sg::agent::dashboard
