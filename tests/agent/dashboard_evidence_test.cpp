// The dashboard's routes about evaluations and presets, without a socket: one
// evaluation's gate evidence, the single-switch effects, the presets' headline numbers
// and the metrics, each matching the store.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/dashboard/router.hpp"
#include "dashboard_support.hpp"
#include "store_sql.hpp"

namespace sg::agent::dashboard {
namespace {

using nlohmann::json;
using test::DashboardRouterTest;

// Adds to campaign 2 of the store at `db_path` a tolerance evaluation of A=1 with its runs:
// baseline, band seed and candidate with loss curves, two speed_base runs and one
// speed_cand run (the gate run is pair 0's candidate). Returns its id.
std::int64_t add_evaluation_with_runs(const std::string& db_path) {
  SQLite::Database db(db_path, SQLite::OPEN_READWRITE);
  const auto add_run = [&](const std::string& purpose, int seed, double samples,
                           std::vector<double> loss) {
    db.exec(
        "INSERT INTO trials (campaign_id, trial_key, purpose, config_key, config_json, seed, "
        "steps, "
        "micro_batch, grad_accum, state, run_ok, samples_per_s) VALUES (2, '" +
        purpose + std::to_string(seed) + std::to_string(samples) + "', '" + purpose +
        "', '', '{}', " + std::to_string(seed) + ", 3, 8, 1, 'finished', 1, " +
        std::to_string(samples) + ")");
    const auto id = db.getLastInsertRowid();
    for (std::size_t s = 0; s < loss.size(); ++s) {
      db.exec(
          "INSERT INTO steps (trial_id, step, loss, loss_bits, grad_norm, grad_norm_bits) VALUES "
          "(" +
          std::to_string(id) + ", " + std::to_string(s) + ", " + std::to_string(loss[s]) +
          ", 'x', 1, 'y')");
    }
    return id;
  };
  const auto s0 = add_run("baseline", 0, 10, {3.0, 2.0, 1.0});
  const auto band = add_run("band", 1000, 10, {3.0, 2.1, 1.0});
  db.exec(
      "INSERT INTO baselines (campaign_id, steps, role, seed, trial_id) VALUES (2, 3, "
      "'preflight_a', 0, " +
      std::to_string(s0) + "), (2, 3, 'band', 1000, " + std::to_string(band) + ")");
  const auto cand = add_run("candidate", 0, 12, {3.0, 2.0, 1.01});
  const auto b0 = add_run("speed_base", 0, 10, {});
  const auto b1 = add_run("speed_base", 0, 8, {});
  const auto c1 = add_run("speed_cand", 0, 12, {});
  db.exec(
      "INSERT INTO evaluations (campaign_id, strategy, config_key, config_json, steps, "
      "disposition, "
      "gate_class, speedup, speedup_spread, trial_ids_json) VALUES (2, 'screen', 'A=1', "
      "'{\"A\":\"1\"}', 3, "
      "'accepted', 'tolerance', 1.35, 0.15, '[" +
      std::to_string(cand) + "," + std::to_string(b0) + "," + std::to_string(b1) + "," +
      std::to_string(c1) + "]')");
  return db.getLastInsertRowid();
}

// One evaluation's gate evidence: baseline, seed band and candidate loss curves, and the
// speed pairs (from the runs' purposes, or from speed_pairs where the schema has it).
TEST_F(DashboardRouterTest, EvidenceShowsLossAgainstTheBandAndTheSpeedPairs) {
  const std::int64_t eval_id = add_evaluation_with_runs(db_);
  Router r(db_);
  const auto ev = get_json(r, "/api/v1/evaluations/" + std::to_string(eval_id) + "/evidence");
  const auto& loss = ev.at("loss");
  EXPECT_EQ(loss.at("baseline").at("loss").size(), 3u);
  EXPECT_EQ(loss.at("band_seeds").size(), 1u);
  EXPECT_EQ(loss.at("candidate").at("loss").back().get<double>(), 1.01);
  EXPECT_NEAR(loss.at("band_rms").get<double>(), std::sqrt(0.01 / 3), 1e-9);
  EXPECT_NEAR(loss.at("limit").get<double>(), 2 * std::sqrt(0.01 / 3),
              1e-9);  // default band factor
  const auto& pairs = ev.at("pairs");
  ASSERT_EQ(pairs.size(), 2u);  // the gate run is pair 0's candidate
  EXPECT_DOUBLE_EQ(pairs[0].at("ratio").get<double>(), 12.0 / 10.0);
  EXPECT_DOUBLE_EQ(pairs[1].at("ratio").get<double>(), 12.0 / 8.0);
  EXPECT_EQ(ev.at("pairs_source"), "runs");
  EXPECT_TRUE(ev.at("evaluation").at("speedup_lo").is_null());
  EXPECT_EQ(r.handle("GET", "/api/v1/evaluations/99999/evidence").status, 404);

  // The same evaluation once its interval and pairs are recorded (schema 6).
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("UPDATE evaluations SET speedup_lo = 1.1, speedup_hi = 1.6, pairs = 2 WHERE id = " +
            std::to_string(eval_id));
    db.exec(
        "INSERT INTO speed_pairs (campaign_id, evaluation_id, config_key, steps, pair_index, "
        "base_trial_id, "
        "cand_trial_id, base_step_s, cand_step_s, log_ratio) VALUES (2, " +
        std::to_string(eval_id) + ", 'A=1', 3, 0, 1, 2, 0.2, 0.1, " +
        std::to_string(std::log(2.0)) + ")");
  }
  const auto v6 = get_json(r, "/api/v1/evaluations/" + std::to_string(eval_id) + "/evidence");
  EXPECT_EQ(v6.at("evaluation").at("speedup_lo").get<double>(), 1.1);
  EXPECT_EQ(v6.at("evaluation").at("pairs").get<int>(), 2);
  ASSERT_EQ(v6.at("pairs").size(), 1u);
  EXPECT_NEAR(v6.at("pairs")[0].at("ratio").get<double>(), 2.0, 1e-6);
  EXPECT_EQ(v6.at("pairs_source"), "speed_pairs");
  const auto sw = get_json(r, "/api/v1/campaigns/2/switches").at("switches");
  bool found = false;
  for (const auto& s : sw) {
    if (s.at("evaluation_id").get<std::int64_t>() != eval_id) continue;
    found = true;
    EXPECT_EQ(s.at("switch"), "A");
    EXPECT_EQ(s.at("lo").get<double>(), 1.1);
    EXPECT_EQ(s.at("hi").get<double>(), 1.6);
    EXPECT_EQ(s.at("interval"), "paired 95 %");
  }
  EXPECT_TRUE(found) << sw.dump();
}

TEST_F(DashboardRouterTest, SwitchEffectsAreTheSingleSwitchEvaluations) {
  Router r(db_);
  {  // a switch that requires another is evaluated with it: still that switch's own row
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec(
        R"(UPDATE campaigns SET manifest_json = '{"switches":[{"name":"B","requires":["A=1"]}]}' WHERE id = 2)");
    db.exec(
        R"(INSERT INTO evaluations (campaign_id, strategy, config_key, config_json, steps, disposition, )"
        R"(gate_class, speedup, speedup_spread, trial_ids_json) VALUES (2, 'screen', 'A=1,B=8', )"
        R"('{"A":"1","B":"8"}', 3, 'accepted', 'bitwise', 1.2, 0.01, '[]'), (2, 'screen', 'A=2,B=8', )"
        R"('{"A":"2","B":"8"}', 3, 'accepted', 'bitwise', 1.3, 0.01, '[]'))");
    const auto two = get_json(r, "/api/v1/campaigns/2/switches").at("switches");
    int found = 0;
    for (const auto& s : two) {
      if (s.at("config_key") == "A=1,B=8") {
        ++found;
        EXPECT_EQ(s.at("switch"), "B");
        EXPECT_EQ(s.at("with"), json::array({"A=1"}));
      }
      EXPECT_NE(s.at("config_key"), "A=2,B=8");  // A=2 is not what B requires: two switches
    }
    EXPECT_EQ(found, 1) << two.dump();
  }
  const auto sw = get_json(r, "/api/v1/campaigns/1/switches").at("switches");
  const int singles = test::single_switch_configs(db_, 1);
  ASSERT_GT(singles, 0) << "the synthetic store should hold some single-switch evaluations";
  EXPECT_EQ(static_cast<int>(sw.size()), singles);
  for (std::size_t i = 0; i < sw.size(); ++i) {
    EXPECT_EQ(sw[i].at("config_key").get<std::string>(),
              sw[i].at("switch").get<std::string>() + "=1");
    EXPECT_EQ(sw[i].at("interval"), "spread");  // no paired bounds in this schema
    EXPECT_NEAR(sw[i].at("hi").get<double>() - sw[i].at("lo").get<double>(), 0.04, 1e-9);
    if (i) EXPECT_GE(sw[i - 1].at("speedup").get<double>(), sw[i].at("speedup").get<double>());
  }
}

// One headline number per preset: the finals' paired figure at the target when there is
// one, in the API and in /metrics alike.
TEST_F(DashboardRouterTest, PresetHeadlineIsTheFinalsFigureAtTheTarget) {
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec(
        "INSERT INTO target_finals (campaign_id, budget_name, budget_bytes, evaluation_id, "
        "config_key, micro_batch, "
        "steps, rounds, disposition, speedup, speedup_spread, trial_ids_json) SELECT campaign_id, "
        "name, budget_bytes, "
        "evaluation_id, config_key, 32, 4, 3, 'accepted', 3.25, 0.05, '[]' FROM presets WHERE "
        "campaign_id = 2 "
        "AND name = 'fast'");
  }
  Router r(db_);
  const auto presets = get_json(r, "/api/v1/campaigns/2/presets");  // alive through the loop
  for (const auto& p : presets.at("presets")) {
    const auto& h = p.at("headline");
    if (p.at("name") == "fast") {
      EXPECT_EQ(h.at("source"), "finals");
      EXPECT_EQ(h.at("speedup").get<double>(), 3.25);
      EXPECT_EQ(h.at("micro_batch").get<int>(), 32);
    } else {
      EXPECT_EQ(h.at("source"), "evaluation");
      EXPECT_EQ(h.at("speedup").get<double>(), p.at("speedup").get<double>());
    }
  }
  EXPECT_NE(
      r.handle("GET", "/metrics").body.find("speedgate_preset_speedup_ratio{preset=\"fast\"} 3.25"),
      std::string::npos);
}

TEST_F(DashboardRouterTest, MetricsUsePrometheusTextFormatWithDbValues) {
  Router r(db_);
  const auto m = r.handle("GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("# TYPE speedgate_evaluations_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("speedgate_evaluations_total{disposition=\"accepted\"} " +
                        std::to_string(counts_.accepted)),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("speedgate_info{"), std::string::npos);
  EXPECT_NE(m.body.find("speedgate_preset_speedup_ratio{preset=\"fast\"}"), std::string::npos);
}

}  // namespace
}  // namespace sg::agent::dashboard
