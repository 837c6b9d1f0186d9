// The dashboard's routes, without a socket: JSON matches the store, assets are exact,
// nothing outside them is served, the DB is never written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/common/errors.hpp"
#include "agent/dashboard/router.hpp"
#include "agent/dashboard/server.hpp"
#include "agent/store/store.hpp"
#include "benchmarks/synthetic_store.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DashboardRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sg-dash-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "store.db").string();
    bench::SyntheticStoreSpec spec;
    spec.campaigns = 2;
    spec.evaluations_per_campaign = 30;
    spec.log_dir = (dir_ / "logs").string();
    counts_ = bench::write_synthetic_store(db_, spec);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  json get_json(const Router& r, const std::string& path) {
    const auto resp = r.handle("GET", path);
    EXPECT_EQ(resp.status, 200) << path << ": " << resp.body;
    EXPECT_EQ(resp.content_type, "application/json");
    return json::parse(resp.body);
  }
  std::filesystem::path dir_;
  std::string db_;
  bench::SyntheticStoreCounts counts_;
};

TEST_F(DashboardRouterTest, CampaignsListsEveryCampaignNewestFirst) {
  Router r(db_);
  const auto c = get_json(r, "/api/v1/campaigns").at("campaigns");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].at("id").get<int>(), 2);
  EXPECT_EQ(c[0].at("evaluations").get<int>() + c[1].at("evaluations").get<int>(), counts_.evaluations);
  EXPECT_EQ(c[0].at("deterministic"), true);
}

TEST_F(DashboardRouterTest, TrialsCarryDispositionSpeedupMemoryAndRunIds) {
  Router r(db_);
  const auto body = get_json(r, "/api/v1/campaigns/1/trials");
  const auto& trials = body.at("trials");
  ASSERT_EQ(trials.size(), 30u);
  for (const auto& t : trials) {
    EXPECT_TRUE(t.at("disposition").is_string());
    EXPECT_TRUE(t.at("speedup").is_number());
    EXPECT_TRUE(t.at("measured_peak_bytes").is_number());
    ASSERT_EQ(t.at("trial_ids").size(), 1u);
  }
  ASSERT_EQ(body.at("budgets").size(), 2u);
  EXPECT_EQ(body.at("budgets")[0].at("name"), "fast");
}

TEST_F(DashboardRouterTest, TrialPagesFilterByDispositionAndTextOnTheServer) {
  Router r(db_);
  const auto all = get_json(r, "/api/v1/campaigns/1/trials?offset=0&limit=7");
  EXPECT_EQ(all.at("matched").get<int>(), 30);
  ASSERT_EQ(all.at("trials").size(), 7u);
  const auto next = get_json(r, "/api/v1/campaigns/1/trials?offset=7&limit=7");
  EXPECT_EQ(next.at("trials")[0].at("id").get<int>(), all.at("trials")[6].at("id").get<int>() + 1);
  const auto accepted = get_json(r, "/api/v1/campaigns/1/trials?disposition=accepted&limit=1000");
  ASSERT_GT(accepted.at("matched").get<int>(), 0);
  for (const auto& t : accepted.at("trials")) EXPECT_EQ(t.at("disposition"), "accepted");
  const auto text = get_json(r, "/api/v1/campaigns/1/trials?q=sg_vae_first&limit=1000");
  ASSERT_GT(text.at("matched").get<int>(), 0);
  for (const auto& t : text.at("trials")) {
    EXPECT_NE(t.at("config_key").get<std::string>().find("SG_VAE_FIRST"), std::string::npos);
  }
  const auto none = get_json(r, "/api/v1/campaigns/1/trials?q=%27%3B%20DROP%20TABLE%20trials%3B--");
  EXPECT_EQ(none.at("matched").get<int>(), 0);
  EXPECT_EQ(get_json(r, "/api/v1/campaigns").at("campaigns").size(), 2u);  // still there
}

TEST_F(DashboardRouterTest, SeriesIsColumnarWithOneEntryPerTrial) {
  Router r(db_);
  const auto body = get_json(r, "/api/v1/campaigns/2/series");
  const auto& s = body.at("series");
  for (const char* column : {"index", "id", "disposition", "speedup", "samples_per_s", "projected_peak_bytes",
                             "measured_peak_bytes", "on_frontier", "preset"}) {
    EXPECT_EQ(s.at(column).size(), 30u) << column;
  }
  for (int i = 0; i < 30; ++i) EXPECT_EQ(s.at("index")[i].get<int>(), i + 1);
  EXPECT_EQ(body.at("trials").get<int>(), 30);
  EXPECT_EQ(body.at("max_points").get<int>(), 500);
  for (const char* chart : {"speedup", "throughput", "frontier", "memory"}) {
    EXPECT_EQ(body.at("totals").at(chart).get<int>(), 30) << chart;
  }
  EXPECT_EQ(body.at("budgets").size(), 2u);
}

// Above max_points the server sends a sample that still has every disposition, every
// preset's trial and every frontier trial, with the totals of the whole campaign.
TEST_F(DashboardRouterTest, SeriesSampleKeepsDispositionsPresetsAndFrontier) {
  {  // a rare disposition: one trial of campaign 1 crashed
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE evaluations SET disposition = 'crash', on_frontier = 0 WHERE id = (SELECT MIN(id) "
            "FROM evaluations WHERE campaign_id = 1 AND disposition = 'slower')");
  }
  Router r(db_);
  const auto full = get_json(r, "/api/v1/campaigns/1/series?max_points=0").at("series");
  ASSERT_EQ(full.at("id").size(), 30u);
  const auto body = get_json(r, "/api/v1/campaigns/1/series?max_points=12");
  const auto& s = body.at("series");
  ASSERT_EQ(s.at("id").size(), 12u);
  EXPECT_EQ(body.at("trials").get<int>(), 30);
  EXPECT_EQ(body.at("totals").at("speedup").get<int>(), 30);
  std::set<std::string> sent, all;
  for (const auto& d : s.at("disposition")) sent.insert(d.get<std::string>());
  int listed = 0;
  for (const auto& [d, n] : body.at("dispositions").items()) {
    all.insert(d);
    listed += n.get<int>();
  }
  EXPECT_EQ(listed, 30);
  EXPECT_TRUE(all.count("crash"));
  EXPECT_EQ(sent, all);
  std::set<std::int64_t> ids;
  for (std::size_t i = 0; i < s.at("id").size(); ++i) {
    ids.insert(s.at("id")[i].get<std::int64_t>());
    const auto at = s.at("index")[i].get<std::size_t>() - 1;  // the same trial in the full series
    EXPECT_EQ(full.at("id")[at], s.at("id")[i]);
    EXPECT_EQ(full.at("speedup")[at], s.at("speedup")[i]);
    if (i > 0) EXPECT_GT(s.at("index")[i].get<int>(), s.at("index")[i - 1].get<int>());
  }
  const auto presets = get_json(r, "/api/v1/campaigns/1/presets");  // a range-for over a temporary's member dangles
  for (const auto& p : presets.at("presets")) {
    EXPECT_TRUE(ids.count(p.at("evaluation_id").get<std::int64_t>())) << "preset " << p.at("name");
  }
  for (std::size_t i = 0; i < full.at("id").size(); ++i) {
    if (full.at("on_frontier")[i] == 1) EXPECT_TRUE(ids.count(full.at("id")[i].get<std::int64_t>())) << i;
  }
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/1/series?max_points=many").status, 400);
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/1/series?max_points=-5").status, 400);
}

// The finals a campaign recorded (here one row on campaign 1), as the report has them; a
// campaign without finals answers an empty list.
TEST_F(DashboardRouterTest, FinalsAreTheCampaignsPairsAtTheTarget) {
  {
    Store s(db_);
    const auto evals = s.evaluations(1);
    ASSERT_FALSE(evals.empty());
    TargetFinalRow f;
    f.evaluation_id = evals.back().id;
    f.budget_name = "fast";
    f.budget_bytes = 141.0 * (1ull << 30);
    f.config_key = evals.back().config_key;
    f.micro_batch = 32;
    f.steps = 4;
    f.rounds = 3;
    f.disposition = Disposition::accepted;
    f.speedup = 3.2;
    f.speedup_spread = 0.05;
    f.trial_ids = {1, 2, 3, 4, 5, 6};
    s.set_target_finals(1, {f});
  }
  Router r(db_);
  const auto one = get_json(r, "/api/v1/campaigns/1/finals");
  EXPECT_EQ(one.at("campaign_id"), 1);
  ASSERT_EQ(one.at("finals").size(), 1u);
  const auto& f = one.at("finals")[0];
  EXPECT_EQ(f.at("budget"), "fast");
  EXPECT_EQ(f.at("micro_batch"), 32);
  EXPECT_EQ(f.at("disposition"), "accepted");
  EXPECT_DOUBLE_EQ(f.at("speedup").get<double>(), 3.2);
  EXPECT_EQ(f.at("trial_ids").size(), 6u);
  EXPECT_TRUE(get_json(r, "/api/v1/campaigns/2/finals").at("finals").empty());
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/99/finals").status, 404);
}

TEST_F(DashboardRouterTest, NewestAliasServesTheNewestCampaign) {
  Router r(db_);
  EXPECT_EQ(get_json(r, "/api/v1/campaigns/newest/series").at("campaign_id").get<int>(), 2);
  EXPECT_EQ(get_json(r, "/api/v1/campaigns/newest/presets").at("campaign_id").get<int>(), 2);
  const auto page = get_json(r, "/api/v1/campaigns/newest/trials?offset=0&limit=5");
  EXPECT_EQ(page.at("campaign_id").get<int>(), 2);
  EXPECT_EQ(page.at("trials")[0].at("campaign_id").get<int>(), 2);
  const std::string empty = (dir_ / "empty.db").string();
  { Store created(empty); }
  EXPECT_EQ(Router(empty).handle("GET", "/api/v1/campaigns/newest/series").status, 404);
}

TEST_F(DashboardRouterTest, PresetSeriesHasOnePointPerNight) {
  Router r(db_);
  const auto series = get_json(r, "/api/v1/series/presets").at("series");
  ASSERT_TRUE(series.contains("fast"));
  EXPECT_EQ(series.at("fast").size(), 2u);
  EXPECT_LT(series.at("fast")[0].at("campaign_id").get<int>(), series.at("fast")[1].at("campaign_id").get<int>());
}

TEST_F(DashboardRouterTest, RunShowsStepsWithBitPatterns) {
  Router r(db_);
  const auto run = get_json(r, "/api/v1/runs/1");
  ASSERT_EQ(run.at("steps").size(), 1u);
  EXPECT_EQ(run.at("steps")[0].at("loss_bits"), "3f800000");
}

TEST_F(DashboardRouterTest, UnknownCampaignRunAndRoutesAre404) {
  Router r(db_);
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/999/trials").status, 404);
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/abc/trials").status, 404);
  EXPECT_EQ(r.handle("GET", "/api/v1/runs/-1").status, 404);
  EXPECT_EQ(r.handle("GET", "/api/v2/campaigns").status, 404);
  EXPECT_EQ(r.handle("POST", "/api/v1/campaigns").status, 405);
}

TEST_F(DashboardRouterTest, ServesOnlyEmbeddedAssets) {
  Router r(db_);
  const auto index = r.handle("GET", "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.body.find("<canvas id=\"chart-frontier\""), std::string::npos);
  const auto chart = r.handle("GET", "/static/chart.min.js");
  EXPECT_EQ(chart.status, 200);
  EXPECT_NE(chart.body.find("Chart.js v"), std::string::npos);  // Debian's libjs-chart.js
  for (const char* bad : {"/../../etc/passwd", "/static/../../etc/passwd", "/etc/passwd",
                          "/static/", "/static/chart.min.js/..", "/index.html/../../x",
                          "//etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd", "/results/speedgate.db"}) {
    EXPECT_EQ(r.handle("GET", bad).status, 404) << bad;
  }
}

TEST_F(DashboardRouterTest, LogsComeOnlyFromPathsRecordedInTheDb) {
  Router r(db_);
  const auto log = r.handle("GET", "/logs/1/stderr");
  EXPECT_EQ(log.status, 200);
  EXPECT_EQ(log.content_type, "text/plain; charset=utf-8");  // never rendered as HTML
  EXPECT_NE(log.body.find("synthetic run 1"), std::string::npos);
  EXPECT_EQ(r.handle("GET", "/logs/1/../../etc/passwd").status, 404);
  EXPECT_EQ(r.handle("GET", "/logs/1/result_json").status, 404);
  EXPECT_EQ(r.handle("GET", "/logs/99999/stdout").status, 404);
}

TEST_F(DashboardRouterTest, MetricsUsePrometheusTextFormatWithDbValues) {
  Router r(db_);
  const auto m = r.handle("GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("# TYPE speedgate_trials_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("speedgate_trials_total{disposition=\"accepted\"} " +
                        std::to_string(counts_.accepted)), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("speedgate_info{"), std::string::npos);
  EXPECT_NE(m.body.find("speedgate_preset_speedup_ratio{preset=\"fast\"}"), std::string::npos);
}

TEST_F(DashboardRouterTest, ServingNeverWritesTheDb) {
  const auto before = slurp(db_);
  {
    Router r(db_);
    for (const char* path : {"/", "/metrics", "/api/v1/campaigns", "/api/v1/campaigns/1/trials",
                             "/api/v1/presets", "/api/v1/series/presets", "/logs/1/stdout"}) {
      r.handle("GET", path);
    }
  }
  EXPECT_EQ(before, slurp(db_));
  Store ro(db_, /*read_only=*/true);
  EXPECT_THROW(ro.db().exec("DELETE FROM campaigns"), SQLite::Exception);
}

TEST_F(DashboardRouterTest, ServeRefusesMissingDbAndBadListenAddress) {
  EXPECT_THROW(Server((dir_ / "missing.db").string(), {"127.0.0.1", 0}), UsageError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing.db"));
  EXPECT_THROW(parse_listen("127.0.0.1:http"), UsageError);
  EXPECT_THROW(parse_listen("127.0.0.1:70000"), UsageError);
  EXPECT_EQ(parse_listen("8000").host, "127.0.0.1");
  EXPECT_EQ(parse_listen("0.0.0.0:9").port, 9);
}

TEST_F(DashboardRouterTest, ServeRefusesANewerSchema) {
  { SQLite::Database db(db_, SQLite::OPEN_READWRITE); db.exec("PRAGMA user_version = 999"); }
  EXPECT_THROW(Server(db_, {"127.0.0.1", 0}), StoreError);
}

}  // namespace
}  // namespace sg::agent::dashboard
