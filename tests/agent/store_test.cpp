// Store: schema mirror, pragmas, migrations, newer-schema refusal, NaN, stale rows.
#include "agent/store/store.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>

#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/store/schema.hpp"
#include "store_sql.hpp"
#include "store_support.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

struct StoreTest : test::TempDbTest {
  std::int64_t campaign(Store& s) { return test::make_campaign(s); }

  // A candidate trial `key` of a new campaign, not yet claimed.
  TrialRow candidate_trial(Store& s, const std::string& key) {
    TrialRow t;
    t.campaign_id = campaign(s);
    t.trial_key = key;
    t.purpose = "candidate";
    return t;
  }

  // An accepted bitwise evaluation of `key` at 4 steps in a new campaign (not yet added).
  EvaluationRow evaluation(Store& s, const std::string& strategy, const std::string& key) {
    EvaluationRow e;
    e.campaign_id = campaign(s);
    e.strategy = strategy;
    e.config_key = key;
    e.steps = 4;
    e.disposition = Disposition::accepted;
    e.gate_class = "bitwise";
    return e;
  }
};

TEST_F(StoreTest, EmbeddedSchemaMirrorsResultsSchemaSql) {
  auto file = read_file(std::string(SPEEDGATE_SOURCE_DIR) + "/results/schema.sql");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(*file, schema_sql());
  // Cut into one part per version, each starting at its header, together the whole file.
  ASSERT_EQ(migrations().size(), static_cast<std::size_t>(kSchemaVersion));
  std::string joined;
  for (std::size_t i = 0; i < migrations().size(); ++i) {
    EXPECT_EQ(migrations()[i].to_version, static_cast<int>(i) + 1);
    EXPECT_EQ(migrations()[i].sql.rfind("-- speedgate store, ", 0), 0u) << i;
    EXPECT_NE(migrations()[i].sql.find("schema version " + std::to_string(i + 1) + " "),
              std::string::npos)
        << i;
    joined += migrations()[i].sql;
  }
  EXPECT_EQ(joined, *file);
}

TEST_F(StoreTest, FreshDatabaseIsCurrentWalWithBusyTimeout) {
  Store s(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_EQ(raw_db(s).execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_GE(raw_db(s).execAndGet("PRAGMA busy_timeout").getInt(), 5000);
}

TEST_F(StoreTest, ReopenDoesNotMigrateTwice) {
  {
    Store s(db);
    campaign(s);
  }
  Store s(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_TRUE(s.latest_campaign(false).has_value());
}

TEST_F(StoreTest, MigratesFromVersionZero) {
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE unrelated(x)");
    EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 0);
  }
  Store s(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_TRUE(raw_db(s).tableExists("trials"));
  EXPECT_TRUE(raw_db(s).tableExists("projections"));
  EXPECT_TRUE(raw_db(s).tableExists("unrelated"));
}

TEST_F(StoreTest, NewerSchemaIsRefusedAndUntouched) {
  { Store s(db); }
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA user_version = 99");
  }
  try {
    Store s(db);
    FAIL() << "a newer schema must be refused";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Store(db, /*read_only=*/true), StoreError);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 99);
}

TEST_F(StoreTest, FailedMigrationRollsBack) {
  {
    // A pre-existing table of the same name makes migration 1 fail half-way.
    SQLite::Database raw(db, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE trials(x)");
  }
  EXPECT_THROW(Store s(db), StoreError);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 0);
  EXPECT_FALSE(raw.tableExists("environments"));
}

TEST_F(StoreTest, NanIsStoredExplicitly) {
  Store s(db);
  auto cid = campaign(s);
  ProjectionRow p;
  p.campaign_id = cid;
  p.inputs = nlohmann::json::object();
  p.projected_bytes = 1;
  p.measured_bytes = std::nan("");
  p.relative_error = INFINITY;
  s.add_projection(p);
  SQLite::Statement q(
      raw_db(s), "SELECT measured_bytes, relative_error, typeof(measured_bytes) FROM projections");
  ASSERT_TRUE(q.executeStep());
  EXPECT_TRUE(std::isnan(column_real(q.getColumn(0))));
  EXPECT_TRUE(std::isinf(column_real(q.getColumn(1))));
  EXPECT_EQ(q.getColumn(2).getString(), "text");  // not NULL
}

TEST_F(StoreTest, ClaimTakesTheQueuedRow) {
  Store s(db);
  TrialRow t = candidate_trial(s, "k");
  auto id = s.claim_trial(t);
  auto row = s.find_trial(t.campaign_id, "k");
  ASSERT_TRUE(row);
  EXPECT_EQ(row->id, id);
  EXPECT_EQ(row->state, "running");
  EXPECT_EQ(row->controller_pid, ::getpid());
}

TEST_F(StoreTest, DeadControllerTrialMarkedStaleExactlyOnceAndRequeued) {
  Store s(db);
  TrialRow t = candidate_trial(s, "cand|A=1");
  auto id = s.claim_trial(t);
  // Simulate a controller that was killed: a pid that no longer exists.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  SQLite::Statement up(raw_db(s), "UPDATE trials SET controller_pid = ? WHERE id = ?");
  up.bind(1, static_cast<int>(child));
  up.bind(2, id);
  up.exec();

  auto marked = s.mark_stale_and_requeue(t.campaign_id, /*stale_after_s=*/3600);
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(marked[0], id);
  EXPECT_TRUE(s.mark_stale_and_requeue(t.campaign_id, 3600).empty()) << "exactly once";
  Store other(db);  // a second controller sees nothing left to mark either
  EXPECT_TRUE(other.mark_stale_and_requeue(t.campaign_id, 3600).empty());

  auto rows = s.trials(t.campaign_id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].disposition, Disposition::stale);
  EXPECT_EQ(rows[0].state, "finished");
  EXPECT_EQ(rows[1].state, "queued");
  EXPECT_EQ(rows[1].requeued_from, id);
  // The next claim for the key takes the queued row instead of inserting.
  EXPECT_EQ(s.claim_trial(t), rows[1].id);
}

TEST_F(StoreTest, LiveControllerTrialIsNotStale) {
  Store s(db);
  TrialRow t = candidate_trial(s, "k");
  s.claim_trial(t);  // our own pid, fresh heartbeat
  EXPECT_TRUE(s.mark_stale_and_requeue(t.campaign_id, 3600).empty());
  // ...but a silent heartbeat makes it stale even when the pid lives.
  raw_db(s).exec("UPDATE trials SET heartbeat_at = 0, controller_pid = 1");
  EXPECT_EQ(s.mark_stale_and_requeue(t.campaign_id, 60).size(), 1u);
}

TEST_F(StoreTest, EvaluationRowsAreUpsertedPerConfigAndSteps) {
  Store s(db);
  EvaluationRow e = evaluation(s, "screen", "A=1");
  e.trial_ids = {1, 2};
  auto id1 = s.add_evaluation(e);
  // Rows that reference the evaluation (foreign keys are on) must not block a re-record.
  s.add_kernel_trial(e.campaign_id, "ROPE", nlohmann::json{{"params", "threads=64"}}, id1);
  s.add_kernel_trial(e.campaign_id, "ROPE", nlohmann::json{{"params", "threads=64"}}, id1);
  e.disposition = Disposition::slower;
  auto id2 = s.add_evaluation(e);
  EXPECT_EQ(id1, id2);
  EXPECT_EQ(raw_db(s).execAndGet("SELECT COUNT(*) FROM kernel_trials").getInt(), 1);
  auto all = s.evaluations(e.campaign_id);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].disposition, Disposition::slower);
  EXPECT_EQ(all[0].trial_ids, (std::vector<std::int64_t>{1, 2}));
}

TEST_F(StoreTest, TargetFinalsAreReplacedAsAWhole) {
  Store s(db);
  const EvaluationRow e = evaluation(s, "stack", "A=1");
  TargetFinalRow f;
  f.campaign_id = e.campaign_id;
  f.evaluation_id = s.add_evaluation(e);
  f.budget_name = "fast";
  f.budget_bytes = 141.0 * (1ull << 30);
  f.config_key = e.config_key;
  f.micro_batch = 32;
  f.steps = 4;
  f.rounds = 3;
  f.disposition = Disposition::oom;
  f.reason = "round 0 at micro-batch 32: out of memory";
  f.trial_ids = {7, 8};
  TargetFinalRow dropped = f;
  dropped.budget_name = "fast_80gb";
  s.set_target_finals(f.campaign_id, {f, dropped});
  ASSERT_EQ(s.target_finals(f.campaign_id).size(), 2u);
  f.disposition = Disposition::accepted;  // a resumed campaign records its finals again
  f.speedup = 2.5;
  f.speedup_spread = std::numeric_limits<double>::quiet_NaN();
  f.trial_ids = {7, 8, 9, 10, 11, 12};
  TargetFinalRow other = f;  // the same finalist in another budget: its own row
  other.budget_name = "fast_80gb";
  s.set_target_finals(f.campaign_id, {f, other});
  const auto rows = s.target_finals(f.campaign_id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].budget_name, "fast");
  EXPECT_EQ(rows[0].disposition, Disposition::accepted);
  EXPECT_DOUBLE_EQ(rows[0].speedup, 2.5);
  EXPECT_TRUE(std::isnan(rows[0].speedup_spread));
  EXPECT_EQ(rows[0].trial_ids.size(), 6u);
  EXPECT_EQ(rows[0].micro_batch, 32);
  EXPECT_EQ(rows[1].budget_name, "fast_80gb");
}

TEST_F(StoreTest, WritesUseImmediateTransactionsAndRollBack) {
  Store s(db);
  auto cid = campaign(s);
  EXPECT_THROW(s.write([&] {
    raw_db(s).exec("UPDATE campaigns SET note = 'x'");
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_EQ(s.campaign(cid)->note, "");
}

}  // namespace
}  // namespace sg::agent
