// results/grafana/speedgate.json only queries metrics that `speedgate serve` exposes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/dashboard/router.hpp"
#include "agent/store/fixtures/synthetic_store.hpp"

namespace sg::agent::dashboard {
namespace {

TEST(GrafanaDashboard, EveryQueriedMetricIsExposed) {
  std::ifstream in(std::string(SPEEDGATE_SOURCE_DIR) + "/results/grafana/speedgate.json");
  ASSERT_TRUE(in.good());
  const auto dashboard = nlohmann::json::parse(in);
  std::set<std::string> queried;
  const std::regex metric("speedgate_[a-z_]+");
  for (const auto& panel : dashboard.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        queried.insert(it->str());
      }
    }
  }
  ASSERT_FALSE(queried.empty());

  const auto db =
      std::filesystem::temp_directory_path() / ("sg-grafana-" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(db);
  bench::write_synthetic_store(db.string(), {});
  const auto metrics = Router(db.string()).handle("GET", "/metrics").body;
  std::filesystem::remove(db);
  for (const auto& name : queried) {
    EXPECT_NE(metrics.find("# TYPE " + name + " "), std::string::npos) << name << " is not exposed";
  }
}

}  // namespace
}  // namespace sg::agent::dashboard
