// The dashboard's routes, without a socket: JSON matches the store, assets are exact,
// nothing outside them is served, the DB is never written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/dashboard/router.hpp"
#include "agent/dashboard/server.hpp"
#include "agent/store/store.hpp"
#include "dashboard_support.hpp"
#include "store_sql.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;
using test::DashboardRouterTest;

TEST_F(DashboardRouterTest, CampaignsListsEveryCampaignNewestFirst) {
  Router r(db_);
  const auto c = get_json(r, "/api/v1/campaigns").at("campaigns");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].at("id").get<int>(), 2);
  EXPECT_EQ(c[0].at("evaluations").get<int>() + c[1].at("evaluations").get<int>(),
            counts_.evaluations);
  EXPECT_EQ(c[0].at("deterministic"), true);
}

TEST_F(DashboardRouterTest, TrialsCarryDispositionSpeedupMemoryAndRunIds) {
  Router r(db_);
  const auto body = get_json(r, "/api/v1/campaigns/1/evaluations");
  const auto& trials = body.at("evaluations");
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
  const auto all = get_json(r, "/api/v1/campaigns/1/evaluations?offset=0&limit=7");
  EXPECT_EQ(all.at("matched").get<int>(), 30);
  ASSERT_EQ(all.at("evaluations").size(), 7u);
  const auto next = get_json(r, "/api/v1/campaigns/1/evaluations?offset=7&limit=7");
  EXPECT_EQ(next.at("evaluations")[0].at("id").get<int>(),
            all.at("evaluations")[6].at("id").get<int>() + 1);
  const auto accepted =
      get_json(r, "/api/v1/campaigns/1/evaluations?disposition=accepted&limit=1000");
  ASSERT_GT(accepted.at("matched").get<int>(), 0);
  for (const auto& t : accepted.at("evaluations")) EXPECT_EQ(t.at("disposition"), "accepted");
  const auto text = get_json(r, "/api/v1/campaigns/1/evaluations?q=sg_vae_first&limit=1000");
  ASSERT_GT(text.at("matched").get<int>(), 0);
  for (const auto& t : text.at("evaluations")) {
    EXPECT_NE(t.at("config_key").get<std::string>().find("SG_VAE_FIRST"), std::string::npos);
  }
  const auto none =
      get_json(r, "/api/v1/campaigns/1/evaluations?q=%27%3B%20DROP%20TABLE%20trials%3B--");
  EXPECT_EQ(none.at("matched").get<int>(), 0);
  EXPECT_EQ(get_json(r, "/api/v1/campaigns").at("campaigns").size(), 2u);  // still there
}

TEST_F(DashboardRouterTest, SeriesIsColumnarWithOneEntryPerTrial) {
  Router r(db_);
  const auto body = get_json(r, "/api/v1/campaigns/2/series");
  const auto& s = body.at("series");
  for (const char* column :
       {"index", "id", "disposition", "speedup", "samples_per_s", "projected_peak_bytes",
        "measured_peak_bytes", "on_frontier", "preset"}) {
    EXPECT_EQ(s.at(column).size(), 30u) << column;
  }
  for (int i = 0; i < 30; ++i) EXPECT_EQ(s.at("index")[i].get<int>(), i + 1);
  EXPECT_EQ(body.at("evaluations").get<int>(), 30);
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
    db.exec(
        "UPDATE evaluations SET disposition = 'crash', on_frontier = 0 WHERE id = (SELECT MIN(id) "
        "FROM evaluations WHERE campaign_id = 1 AND disposition = 'slower')");
  }
  Router r(db_);
  const auto full = get_json(r, "/api/v1/campaigns/1/series?max_points=0").at("series");
  ASSERT_EQ(full.at("id").size(), 30u);
  const auto body = get_json(r, "/api/v1/campaigns/1/series?max_points=12");
  const auto& s = body.at("series");
  ASSERT_EQ(s.at("id").size(), 12u);
  EXPECT_EQ(body.at("evaluations").get<int>(), 30);
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
  const auto presets =
      get_json(r, "/api/v1/campaigns/1/presets");  // a range-for over a temporary's member dangles
  for (const auto& p : presets.at("presets")) {
    EXPECT_TRUE(ids.count(p.at("evaluation_id").get<std::int64_t>())) << "preset " << p.at("name");
  }
  for (std::size_t i = 0; i < full.at("id").size(); ++i) {
    if (full.at("on_frontier")[i] == 1)
      EXPECT_TRUE(ids.count(full.at("id")[i].get<std::int64_t>())) << i;
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
  const auto page = get_json(r, "/api/v1/campaigns/newest/evaluations?offset=0&limit=5");
  EXPECT_EQ(page.at("campaign_id").get<int>(), 2);
  EXPECT_EQ(page.at("evaluations")[0].at("campaign_id").get<int>(), 2);
  const std::string empty = (dir_ / "empty.db").string();
  { Store created(empty); }
  EXPECT_EQ(Router(empty).handle("GET", "/api/v1/campaigns/newest/series").status, 404);
}

TEST_F(DashboardRouterTest, PresetSeriesHasOnePointPerNight) {
  Router r(db_);
  const auto series = get_json(r, "/api/v1/series/presets").at("series");
  ASSERT_TRUE(series.contains("fast"));
  EXPECT_EQ(series.at("fast").size(), 2u);
  EXPECT_LT(series.at("fast")[0].at("campaign_id").get<int>(),
            series.at("fast")[1].at("campaign_id").get<int>());
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
  EXPECT_EQ(r.handle("DELETE", "/").headers, "Allow: GET, HEAD\r\n");
}

TEST_F(DashboardRouterTest, ServesOnlyEmbeddedAssets) {
  Router r(db_);
  const auto index = r.handle("GET", "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.body.find("<canvas id=\"chart-frontier\""), std::string::npos);
  const auto chart = r.handle("GET", "/static/chart.min.js");
  EXPECT_EQ(chart.status, 200);
  EXPECT_NE(chart.body.find("Chart.js v"), std::string::npos);  // Debian's libjs-chart.js
  for (const char* bad :
       {"/../../etc/passwd", "/static/../../etc/passwd", "/etc/passwd", "/static/",
        "/static/chart.min.js/..", "/index.html/../../x", "//etc/passwd",
        "/static/%2e%2e/%2e%2e/etc/passwd", "/results/speedgate.db"}) {
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

// A trainer that swaps its log for a link must not get the link's target served; a log
// stored relative to the controller's directory is found beside the DB.
TEST_F(DashboardRouterTest, LogsAreNeverReadThroughLinksAndResolveBesideTheDb) {
  std::filesystem::create_directories(dir_ / "secret");
  std::ofstream(dir_ / "secret" / "shadow") << "root:hash\n";
  const auto run_dir = dir_ / "logs" / "c1" / "t1";
  std::filesystem::remove(run_dir / "stdout.log");
  std::filesystem::create_symlink(dir_ / "secret" / "shadow", run_dir / "stdout.log");
  Router r(db_);
  EXPECT_EQ(r.handle("GET", "/logs/1/stdout").status, 404);
  EXPECT_EQ(r.handle("GET", "/logs/1/stderr").status, 200);
  {  // the run row names another run's directory: refused
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE trials SET stderr_log = '" +
            (dir_ / "logs" / "c1" / "t2" / "stderr.log").string() + "' WHERE id = 1");
  }
  EXPECT_EQ(r.handle("GET", "/logs/1/stderr").status, 404);
  {  // relative, as `tune --db results/sg.db` run from the repository root stores it
    std::filesystem::create_directories(dir_ / "runs" / "c1" / "t3");
    std::ofstream(dir_ / "runs" / "c1" / "t3" / "stderr.log") << "relative log\n";
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE trials SET stderr_log = 'results/runs/c1/t3/stderr.log' WHERE id = 3");
  }
  const auto rel = r.handle("GET", "/logs/3/stderr");
  EXPECT_EQ(rel.status, 200);
  EXPECT_EQ(rel.body, "relative log\n");
}

TEST_F(DashboardRouterTest, EvaluationsSortByAColumnWithNullsLast) {
  Router r(db_);
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE evaluations SET speedup = 'NaN' WHERE id = 2");
  }
  const auto page = get_json(r, "/api/v1/campaigns/1/evaluations?sort=speedup&dir=desc&limit=1000")
                        .at("evaluations");
  ASSERT_EQ(page.size(), 30u);
  for (std::size_t i = 1; i + 1 < page.size(); ++i) {
    EXPECT_GE(page[i - 1].at("speedup").get<double>(), page[i].at("speedup").get<double>());
  }
  EXPECT_EQ(page.back().at("id").get<int>(), 2);  // no number: last
  const auto up = get_json(r, "/api/v1/campaigns/1/evaluations?sort=config_key&dir=asc&limit=1000")
                      .at("evaluations");
  for (std::size_t i = 1; i < up.size(); ++i) {
    EXPECT_LE(up[i - 1].at("config_key").get<std::string>(),
              up[i].at("config_key").get<std::string>());
  }
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/1/evaluations?sort=id;DROP&limit=5").status, 400);
  EXPECT_EQ(r.handle("GET", "/api/v1/campaigns/1/evaluations?sort=id&dir=sideways").status, 400);
}

TEST_F(DashboardRouterTest, SeriesCarriesTheBestSoFarOverEveryEvaluation) {
  Router r(db_);
  const auto body = get_json(r, "/api/v1/campaigns/1/series?max_points=5");
  const auto& best = body.at("best_so_far");
  ASSERT_FALSE(best.at("index").empty());
  SQLite::Database db(db_, SQLite::OPEN_READONLY);
  const double max = db.execAndGet(
                           "SELECT MAX(speedup) FROM evaluations WHERE campaign_id = 1 AND "
                           "disposition = 'accepted'")
                         .getDouble();
  EXPECT_DOUBLE_EQ(best.at("speedup").back().get<double>(), max);
  EXPECT_EQ(best.at("index").back().get<int>(), 30);  // reaches the last evaluation
  for (std::size_t i = 1; i < best.at("index").size(); ++i) {
    EXPECT_GT(best.at("index")[i].get<int>(), best.at("index")[i - 1].get<int>());
    EXPECT_GE(best.at("speedup")[i].get<double>(), best.at("speedup")[i - 1].get<double>());
  }
}

TEST_F(DashboardRouterTest, ServingNeverWritesTheDb) {
  const auto before = read_file(db_).value();
  {
    Router r(db_);
    for (const char* path :
         {"/", "/metrics", "/api/v1/campaigns", "/api/v1/campaigns/1/evaluations",
          "/api/v1/presets", "/api/v1/series/presets", "/logs/1/stdout"}) {
      r.handle("GET", path);
    }
  }
  EXPECT_EQ(before, read_file(db_).value());
  Store ro(db_, /*read_only=*/true);
  EXPECT_THROW(raw_db(ro).exec("DELETE FROM campaigns"), SQLite::Exception);
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
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA user_version = 999");
  }
  EXPECT_THROW(Server(db_, {"127.0.0.1", 0}), StoreError);
}

}  // namespace
}  // namespace sg::agent::dashboard
