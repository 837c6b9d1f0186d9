// The dashboard served for real on a loopback port: raw HTTP (traversal, HEAD),
// `promtool check metrics` on a live scrape, a real Prometheus server scraping it, and
// headless Chromium rendering the charts (a screenshot is kept as a test artifact).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "agent/dashboard/server.hpp"
#include "agent/store/fixtures/synthetic_store.hpp"
#include "benchmarks/http_get.hpp"
#include "dashboard_support.hpp"
#include "integration/run_command.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using sg::test::run_command;

using test::free_port;

class DashboardLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = test::synthetic_store_dir("sg-live-", 3, 40);
    dir_ = store.dir;
    db_ = store.db;
    counts_ = store.counts;
    server_ = std::make_unique<Server>(db_, ListenAddress{"127.0.0.1", 0});
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  // Headless chromium with a profile `profile` in dir_ and `budget_ms` of virtual time;
  // the action and the URL follow.
  std::string chromium(const std::string& profile, int budget_ms) const {
    return "timeout 90 chromium --headless --no-sandbox --disable-gpu "
           "--disable-background-networking --disable-dev-shm-usage --user-data-dir=" +
           (dir_ / profile).string() +
           " --window-size=1400,2000 --virtual-time-budget=" + std::to_string(budget_ms) + " ";
  }
  fs::path dir_;
  std::string db_;
  bench::SyntheticStoreCounts counts_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

TEST_F(DashboardLiveTest, TraversalAttemptsOverTheWireAre404) {
  EXPECT_EQ(bench::http_get(port_, "/").status, 200);
  for (const char* target : {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
                             "/static/..%2f..%2f..%2fetc%2fpasswd", "/static/../../store.db",
                             "/logs/1/..%2f..%2fstore.db", "/api/v1/../../../etc/passwd"}) {
    const auto r = bench::http_get(port_, target);
    EXPECT_EQ(r.status, 404) << target << "\n" << r.headers;
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << target;
  }
}

TEST_F(DashboardLiveTest, MetricsHaveTheExpositionContentType) {
  const auto r = bench::http_get(port_, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos)
      << r.headers;
  const auto head = bench::http_get(port_, "/metrics", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST_F(DashboardLiveTest, PromtoolAcceptsALiveScrape) {
  const auto r = bench::http_get(port_, "/metrics");
  ASSERT_EQ(r.status, 200);
  const auto file = dir_ / "scrape.txt";
  std::ofstream(file) << r.body;
  const auto check = run_command("promtool check metrics < " + file.string() + " 2>&1");
  EXPECT_EQ(check.exit_code, 0) << check.out << "\n--- scrape ---\n" << r.body;
}

TEST_F(DashboardLiveTest, PrometheusScrapesTrialCountsThatMatchTheDb) {
  const int prom_port = free_port();
  const auto config = dir_ / "prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        << "scrape_configs:\n  - job_name: speedgate\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << port_ << "']\n";
  const auto log = dir_ / "prometheus.log";
  const std::string cmd = "prometheus --config.file=" + config.string() +
                          " --storage.tsdb.path=" + (dir_ / "tsdb").string() +
                          " --web.listen-address=127.0.0.1:" + std::to_string(prom_port) + " > " +
                          log.string() + " 2>&1 & echo $!";
  const auto started = run_command(cmd);
  ASSERT_EQ(started.exit_code, 0);
  const int pid = std::stoi(started.out);
  json values = json::object();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto r = bench::http_get(prom_port, "/api/v1/query?query=speedgate_evaluations_total");
    if (r.status == 200) {
      const auto body = json::parse(r.body, nullptr, false);
      if (!body.is_discarded() && body.value("status", "") == "success" &&
          !body["data"]["result"].empty()) {
        for (const auto& series : body["data"]["result"]) {
          values[series["metric"]["disposition"].get<std::string>()] =
              std::stod(series["value"][1].get<std::string>());
        }
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  ASSERT_FALSE(values.empty())
      << "Prometheus never returned speedgate_evaluations_total; its log:\n"
      << run_command("cat " + log.string()).out;
  EXPECT_EQ(values.value("accepted", -1.0), counts_.accepted);
  EXPECT_EQ(values.value("gate_failed", -1.0), counts_.gate_failed);
  EXPECT_EQ(values.value("slower", -1.0), counts_.slower);
  EXPECT_EQ(values.value("pruned", -1.0), counts_.pruned);
  EXPECT_EQ(values.value("oom", -1.0), counts_.oom);
  EXPECT_EQ(values.value("crash", -1.0), 0);
}

TEST_F(DashboardLiveTest, HeadlessChromiumRendersEveryChart) {
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  const std::string chromium = this->chromium("profile", 15000);
  const auto dom = run_command(chromium + "--dump-dom " + url + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.out;
  EXPECT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos) << dom.out.substr(0, 3000);
  // Newest campaign (3) is shown: 40 trials in the speedup and throughput charts, 40
  // projections, and one trend point per night for each preset.
  std::map<std::string, std::string> points, rendered;
  const std::regex canvas(R"re(<canvas id="([a-z-]+)"([^>]*)>)re");
  for (std::sregex_iterator it(dom.out.begin(), dom.out.end(), canvas), end; it != end; ++it) {
    const std::string attrs = (*it)[2];
    std::smatch m;
    if (std::regex_search(attrs, m, std::regex(R"re(data-points="(\d+)")re")))
      points[(*it)[1]] = m[1];
    if (std::regex_search(attrs, m, std::regex(R"re(data-rendered="(\w+)")re")))
      rendered[(*it)[1]] = m[1];
  }
  for (const char* id : {"chart-speedup", "chart-throughput", "chart-frontier", "chart-memory",
                         "chart-trend", "chart-switches"}) {
    EXPECT_EQ(rendered[id], "yes") << id << " has no ink";
  }
  // Each switch's own gain: one bar per single-switch configuration of campaign 3.
  {
    const int singles = test::single_switch_configs(db_, 3);
    EXPECT_GT(singles, 0);
    EXPECT_EQ(points["chart-switches"], std::to_string(singles));
  }
  // The best-so-far line and the presets' markers are drawn with the speedup and frontier.
  EXPECT_NE(dom.out.find("best so far:"), std::string::npos);
  EXPECT_NE(dom.out.find("presets:2"), std::string::npos);
  // A finished campaign is not polled.
  EXPECT_EQ(dom.out.find("data-refreshes"), std::string::npos);
  EXPECT_EQ(points["chart-speedup"], "40");
  EXPECT_EQ(points["chart-throughput"], "40");
  EXPECT_EQ(points["chart-memory"], "40");
  EXPECT_EQ(points["chart-frontier"], "40");
  EXPECT_GE(std::stoi(points["chart-trend"].empty() ? "0" : points["chart-trend"]), 3);
  // Values from the DB are text, never markup: the synthetic reason has a literal <b>.
  EXPECT_EQ(dom.out.find("<b>"), std::string::npos);
  EXPECT_NE(dom.out.find("&lt;b&gt;"), std::string::npos);

  const fs::path artifacts = fs::path(SPEEDGATE_BIN_DIR).parent_path() / "test-artifacts";
  fs::create_directories(artifacts);
  const auto png = artifacts / "dashboard.png";
  fs::remove(png);
  const auto shot = run_command(chromium + "--screenshot=" + png.string() + " " + url + " 2>&1");
  EXPECT_EQ(shot.exit_code, 0) << shot.out;
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u) << "screenshot looks blank";
}

// /#evaluation-<id> opens that evaluation's gate evidence: its title, config and the
// loss and speed-pair charts (drawn from /api/v1/evaluations/<id>/evidence).
TEST_F(DashboardLiveTest, EvidenceOfOneEvaluationIsDrawn) {
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  const auto id = db.execAndGet("SELECT MAX(id) FROM evaluations WHERE campaign_id = 3").getInt64();
  const std::string config =
      db.execAndGet("SELECT config_key FROM evaluations WHERE id = " + std::to_string(id))
          .getString();
  const std::string url =
      "http://127.0.0.1:" + std::to_string(port_) + "/#evaluation-" + std::to_string(id);
  const auto dom =
      run_command(chromium("profile-evidence", 15000) + "--dump-dom '" + url + "' 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.out;
  EXPECT_NE(dom.out.find("Evaluation #" + std::to_string(id) + " "), std::string::npos)
      << dom.out.substr(0, 3000);
  EXPECT_NE(dom.out.find(">" + config + "<"), std::string::npos) << config;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(dom.out, m, std::regex(R"re(<canvas id="chart-evidence-loss"([^>]*)>)re")));
  const std::string attrs = m[1];
  EXPECT_NE(attrs.find("candidate"), std::string::npos) << attrs;  // its gate run's loss curve
  EXPECT_EQ(dom.out.find("<section id=\"evidence\" class=\"evidence\" hidden"), std::string::npos);
}

// While the shown campaign runs, the page polls it: it says so and has refreshed at least
// once within the virtual time budget (virtual time runs the 5 s timer).
TEST_F(DashboardLiveTest, ARunningCampaignIsRefreshedLive) {
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE campaigns SET state = 'running', finished_at = NULL WHERE id = 3");
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  const auto dom =
      run_command(chromium("profile-live", 12000) + "--dump-dom " + url + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.out;
  EXPECT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos) << dom.out.substr(0, 3000);
  EXPECT_NE(dom.out.find("● live"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom.out, m, std::regex(R"re(data-refreshes="(\d+)")re")))
      << "never refreshed";
  EXPECT_GE(std::stoi(m[1]), 1);
}

// Above 500 trials the server sends 500 of them and each chart draws those: every
// disposition keeps its share, a rare one is still there (a sample that kept every
// accepted trial drew only accepted ones once they were many), the presets' stars and the
// frontier are drawn, and the captions and data-points count the whole campaign.
TEST_F(DashboardLiveTest, LargeCampaignChartsDrawASampleOfEveryDisposition) {
  const std::string big_db = (dir_ / "big.db").string();
  bench::SyntheticStoreSpec spec;
  spec.campaigns = 1;
  spec.evaluations_per_campaign = 4500;
  const auto counts = bench::write_synthetic_store(big_db, spec);
  ASSERT_GT(counts.accepted, 500) << "the store must have more accepted trials than a chart draws";
  {  // one crash among 4,500 trials: its proportional share of 500 points rounds to 0
    SQLite::Database db(big_db, SQLite::OPEN_READWRITE);
    db.exec(
        "UPDATE evaluations SET disposition = 'crash' WHERE id = (SELECT MIN(id) FROM evaluations "
        "WHERE disposition = 'slower')");
  }
  Server big(big_db, ListenAddress{"127.0.0.1", 0});
  const auto dom = run_command(chromium("profile-big", 15000) + "--dump-dom http://127.0.0.1:" +
                               std::to_string(big.port()) + "/ 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.out;
  ASSERT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos) << dom.out.substr(0, 3000);
  const auto attr = [&](const std::string& chart, const std::string& name) {
    std::smatch m;
    if (!std::regex_search(dom.out, m, std::regex("<canvas id=\"" + chart + "\"([^>]*)>")))
      return std::string();
    const std::string attrs = m[1];
    std::smatch v;
    return std::regex_search(attrs, v, std::regex(name + R"re(="([^"]*)")re")) ? std::string(v[1])
                                                                               : "";
  };
  for (const char* chart :
       {"chart-speedup", "chart-throughput", "chart-frontier", "chart-memory"}) {
    EXPECT_EQ(attr(chart, "data-points"), "4500") << chart;  // what the chart stands for
    EXPECT_EQ(attr(chart, "data-drawn"), "500") << chart;    // what the server sent
    EXPECT_EQ(attr(chart, "data-rendered"), "yes") << chart;
  }
  for (const char* chart : {"chart-speedup", "chart-throughput", "chart-frontier"}) {
    for (const char* d : {"accepted", "gate_failed", "slower", "pruned", "oom", "crash"}) {
      EXPECT_NE(attr(chart, "data-series").find(d), std::string::npos)
          << d << " missing from " << chart << ": " << attr(chart, "data-series");
    }
  }
  // Both presets' stars, and a frontier line through the frontier trials sent: the
  // presets' own trials plus at most 248 others (half of 500 less the two presets), evenly
  // spread; the synthetic store marks about 300 of 4,500, so the line is a sample too.
  const std::string decorations = attr("chart-frontier", "data-decorations");
  EXPECT_NE(decorations.find("presets:2"), std::string::npos) << decorations;
  SQLite::Database db(big_db, SQLite::OPEN_READONLY);
  const std::string on_frontier = "SELECT COUNT(*) FROM evaluations WHERE on_frontier = 1 AND id ";
  const int others =
      db.execAndGet(on_frontier + "NOT IN (SELECT evaluation_id FROM presets)").getInt();
  const int presets =
      db.execAndGet(on_frontier + "IN (SELECT evaluation_id FROM presets)").getInt();
  ASSERT_GT(others, 248) << "the store's frontier should be larger than the sample keeps";
  EXPECT_NE(decorations.find("frontier:" + std::to_string(248 + presets) + ","), std::string::npos)
      << decorations;
  EXPECT_NE(dom.out.find("500 of 4500 points drawn"), std::string::npos);
}

}  // namespace
}  // namespace sg::agent::dashboard
