// What the dashboard tests share: synthetic stores (agent/store/fixtures/synthetic_store.hpp)
// in a temp dir of the test's own, and the router tests' fixture.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/dashboard/router.hpp"
#include "agent/store/fixtures/synthetic_store.hpp"
#include "test_util.hpp"

namespace sg::agent::test {

// A loopback port that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A fresh temp dir (make_temp_dir(prefix)) holding store.db,
// a synthetic store of `campaigns` campaigns of `evaluations` each, its logs under logs/.
struct SyntheticStoreDir {
  std::filesystem::path dir;
  std::string db;
  bench::SyntheticStoreCounts counts;
};
inline SyntheticStoreDir synthetic_store_dir(const std::string& prefix, int campaigns,
                                             int evaluations) {
  SyntheticStoreDir out;
  out.dir = make_temp_dir(prefix);
  out.db = (out.dir / "store.db").string();
  bench::SyntheticStoreSpec spec;
  spec.campaigns = campaigns;
  spec.evaluations_per_campaign = evaluations;
  spec.log_dir = (out.dir / "logs").string();
  out.counts = bench::write_synthetic_store(out.db, spec);
  return out;
}

// How many single-switch configurations campaign `campaign` of the store at `db` evaluated.
inline int single_switch_configs(const std::string& db, int campaign) {
  SQLite::Database read(db, SQLite::OPEN_READONLY);
  SQLite::Statement q(read,
                      "SELECT COUNT(DISTINCT config_key) FROM evaluations WHERE campaign_id = ? "
                      "AND (SELECT COUNT(*) FROM json_each(config_json)) = 1");
  q.bind(1, campaign);
  q.executeStep();
  return q.getColumn(0).getInt();
}

// Two campaigns of 30 evaluations each.
class DashboardRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = synthetic_store_dir("sg-dash-", 2, 30);
    dir_ = store.dir;
    db_ = store.db;
    counts_ = store.counts;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  nlohmann::json get_json(const dashboard::Router& r, const std::string& path) {
    const auto resp = r.handle("GET", path);
    EXPECT_EQ(resp.status, 200) << path << ": " << resp.body;
    EXPECT_EQ(resp.content_type, "application/json");
    return nlohmann::json::parse(resp.body);
  }
  std::filesystem::path dir_;
  std::string db_;
  bench::SyntheticStoreCounts counts_;
};

}  // namespace sg::agent::test
