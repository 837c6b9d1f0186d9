// Schema v6 (agent/store/speed_store.cpp): a version-5 database migrates in place and
// keeps its rows; `inconclusive` is accepted on the migrating connection itself; pairs,
// host noise and rounding bands round-trip.
#include <filesystem>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include "agent/store/schema.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

// A database as speedgate left it at schema version 5, with one evaluation.
void make_v5_database(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  for (const auto& m : migrations()) {
    if (m.to_version > 5) break;
    db.exec(m.sql);
  }
  db.exec("PRAGMA user_version = 5");
  db.exec(
      "INSERT INTO campaigns(workload, size, trainer, manifest_json, options_json, state) "
      "VALUES ('wam', 'tiny', 't', '{}', '{}', 'finished')");
  db.exec(
      "INSERT INTO evaluations(campaign_id, strategy, config_key, config_json, steps, disposition, "
      "gate_class, "
      "speedup, speedup_spread, trial_ids_json) VALUES (1, 'screen', 'A=1', '{}', 4, 'accepted', "
      "'bitwise', "
      "1.5, 0.2, '[]')");
}

TEST(StoreSpeed, VersionFiveDatabaseMigratesAndTakesInconclusive) {
  const std::string dir = test::make_temp_dir("store_v5");
  const std::string path = dir + "/v5.db";
  make_v5_database(path);
  Store s(path);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  auto rows = s.evaluations(1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].speedup, 1.5);
  EXPECT_TRUE(std::isnan(rows[0].speedup_lo)) << "no interval was measured for an old row";
  EXPECT_EQ(rows[0].pairs, 0);
  EvaluationRow e = rows[0];
  e.id = 0;
  e.config_key = "B=1";
  e.disposition = Disposition::inconclusive;
  e.speedup = 1.01, e.speedup_lo = 0.97, e.speedup_hi = 1.05, e.pairs = 8;
  const auto id = s.add_evaluation(e);
  rows = s.evaluations(1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].id, id);
  EXPECT_EQ(rows[1].disposition, Disposition::inconclusive);
  EXPECT_DOUBLE_EQ(rows[1].speedup_lo, 0.97);
  EXPECT_DOUBLE_EQ(rows[1].speedup_hi, 1.05);
  EXPECT_EQ(rows[1].pairs, 8);
  EXPECT_EQ(raw_db(s).execAndGet("PRAGMA integrity_check").getString(), "ok");
  std::filesystem::remove_all(dir);
}

TEST(StoreSpeed, AnOlderDatabaseOpenedReadOnlyHasNoSpeedEvidence) {
  const std::string dir = test::make_temp_dir("store_v5_ro");
  const std::string path = dir + "/v5.db";
  make_v5_database(path);
  Store s(path, /*read_only=*/true);
  EXPECT_EQ(s.schema_version(), 5);
  ASSERT_EQ(s.evaluations(1).size(), 1u);
  EXPECT_TRUE(s.speed_pairs(1, 1).empty());
  EXPECT_TRUE(s.host_noise(1).empty());
  EXPECT_TRUE(s.rounding_bands(1).empty());
  std::filesystem::remove_all(dir);
}

TEST(StoreSpeed, PairsNoiseAndBandsRoundTrip) {
  const std::string dir = test::make_temp_dir("store_speed");
  Store s(dir + "/db.sqlite");
  CampaignRow c;
  c.workload = "wam", c.size = "tiny", c.trainer = "t";
  const auto cid = s.create_campaign(c);
  TrialRow t;
  t.campaign_id = cid, t.trial_key = "k1", t.purpose = "speed_base";
  const auto t1 = s.claim_trial(t);
  t.trial_key = "k2", t.purpose = "speed_cand";
  const auto t2 = s.claim_trial(t);
  EvaluationRow e;
  e.campaign_id = cid, e.strategy = "screen", e.config_key = "A=1", e.steps = 4,
  e.gate_class = "bitwise";
  e.disposition = Disposition::accepted;
  const auto eid = s.add_evaluation(e);
  s.set_speed_pairs(eid, {{cid, eid, t1, t2, "A=1", 4, 0, 2.0, 1.0, std::log(2.0)}});
  s.set_speed_pairs(eid,
                    {{cid, eid, t1, t2, "A=1", 4, 0, 2.0, 1.6, std::log(1.25)}});  // replaced whole
  auto pairs = s.speed_pairs(cid, eid);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(pairs[0].cand_step_s, 1.6);
  s.add_noise_pairs(cid, 4, {{cid, 0, t1, t2, "", 4, 0, 1.0, 1.01, std::log(1.0 / 1.01)}});
  EXPECT_EQ(s.speed_pairs(cid, 0).size(), 1u);
  HostNoiseRow n;
  n.campaign_id = cid, n.steps = 4, n.micro_batch = 1, n.pairs = 4, n.sd_log_ratio = 0.03;
  n.detectable_speedup = 1.09, n.resolution = 0.07, n.min_effect = 0.02, n.max_repeats = 8;
  s.set_host_noise(n);
  n.sd_log_ratio = 0.02;
  s.set_host_noise(n);  // one row per (campaign, steps, micro-batch)
  auto noise = s.host_noise(cid);
  ASSERT_EQ(noise.size(), 1u);
  EXPECT_DOUBLE_EQ(noise[0].sd_log_ratio, 0.02);
  RoundingBandRow b;
  b.campaign_id = cid, b.steps = 4, b.seeds = 2, b.perturb_eps = 1.0 / 256, b.curve_rms = 4e-5;
  b.trial_ids = {t1};
  s.set_rounding_band(b);
  auto bands = s.rounding_bands(cid);
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_DOUBLE_EQ(bands[0].curve_rms, 4e-5);
  EXPECT_EQ(bands[0].trial_ids, std::vector<std::int64_t>{t1});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
