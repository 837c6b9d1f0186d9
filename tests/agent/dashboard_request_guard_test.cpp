// request_guard.hpp: which requests reach the router (issue 31: DNS rebinding, POST,
// "/index.html%00.js").
#include <gtest/gtest.h>

#include "agent/dashboard/request_guard.hpp"

namespace sg::agent::dashboard {
namespace {

HostPolicy loopback() { return {"127.0.0.1", 8321, {}}; }

TEST(DashboardRequestGuard, HostMustNameThisServer) {
  const auto p = loopback();
  for (const char* ok :
       {"127.0.0.1", "127.0.0.1:8321", "localhost:8321", "LOCALHOST", "[::1]:8321"}) {
    EXPECT_TRUE(host_allowed(p, ok)) << ok;
  }
  for (const char* bad : {"evil.example", "evil.example:8321", "127.0.0.1:8322", "127.0.0.1:", "",
                          "10.0.0.1:8321", "[::1", "a:b:c", "localhost.evil.example"}) {
    EXPECT_FALSE(host_allowed(p, bad)) << bad;
  }
  HostPolicy named = loopback();
  named.allowed = {"Box.Lan"};
  EXPECT_TRUE(host_allowed(named, "box.lan:8321"));
  EXPECT_FALSE(host_allowed(named, "other.lan:8321"));
}

TEST(DashboardRequestGuard, WildcardListenTakesAddressesButNotNames) {
  const HostPolicy any{"0.0.0.0", 80, {"dash.example"}};
  EXPECT_TRUE(host_allowed(any, "192.168.1.7"));
  EXPECT_TRUE(host_allowed(any, "[fe80::1]:80"));
  EXPECT_TRUE(host_allowed(any, "dash.example"));
  EXPECT_FALSE(host_allowed(any, "rebind.attacker.example"));
}

TEST(DashboardRequestGuard, OnlyGetAndHeadWith405AndAllow) {
  for (const char* m : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "FOO"}) {
    const auto r = guard_request(loopback(), m, "1.1", "127.0.0.1", "/");
    ASSERT_TRUE(r) << m;
    EXPECT_EQ(r->status, 405) << m;
    EXPECT_EQ(r->headers, "Allow: GET, HEAD\r\n");
  }
  EXPECT_FALSE(guard_request(loopback(), "GET", "1.1", "127.0.0.1:8321", "/"));
  EXPECT_FALSE(guard_request(loopback(), "HEAD", "1.1", "127.0.0.1:8321", "/metrics"));
}

TEST(DashboardRequestGuard, ForeignOrMissingHostIsRefused) {
  EXPECT_EQ(guard_request(loopback(), "GET", "1.1", "evil.example", "/")->status, 421);
  EXPECT_EQ(guard_request(loopback(), "GET", "1.1", nullptr, "/")->status, 400);
  EXPECT_FALSE(guard_request(loopback(), "GET", "1.0", nullptr, "/"));  // HTTP/1.0 has no Host
}

TEST(DashboardRequestGuard, ControlBytesRawOrEncodedAre400) {
  for (const char* bad :
       {"/index.html%00.js", "/%0a", "/a%0D%0ASet-Cookie:x", "/%7f", "/%1F", "/api/v1/x%09y"}) {
    const auto r = guard_request(loopback(), "GET", "1.1", "127.0.0.1", bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
  }
  EXPECT_EQ(
      guard_request(loopback(), "GET", "1.1", "127.0.0.1", std::string_view("/a\0b", 4))->status,
      400);
  EXPECT_EQ(guard_request(loopback(), "GET", "1.1", "127.0.0.1", "/a\tb")->status, 400);
  for (const char* ok : {"/", "/static/app.js",
                         "/api/v1/campaigns/1/evaluations?q=%20a%2Fb&sort=speedup", "/%", "/%2"}) {
    EXPECT_FALSE(guard_request(loopback(), "GET", "1.1", "127.0.0.1", ok)) << ok;
  }
}

}  // namespace
}  // namespace sg::agent::dashboard
