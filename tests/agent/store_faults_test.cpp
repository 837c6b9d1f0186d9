// Store under storage faults (docs/reliability.md): a full disk is a clear
// StoreError with the write rolled back and the file intact; controllers opening a
// fresh DB at the same moment migrate it exactly once.
#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "agent/common/errors.hpp"
#include "agent/store/schema.hpp"
#include "agent/store/store.hpp"
#include "store_sql.hpp"
#include "store_support.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

using StoreFaultsTest = test::TempDbTest;
using test::make_campaign;

std::string integrity(const std::string& path) {
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  return raw.execAndGet("PRAGMA integrity_check").getString();
}

// A trial claimed, then finished with a result large enough that a few of them
// fill the pages left under max_page_count. *claimed tells which write failed.
void record_trial(Store& s, std::int64_t campaign_id, int i, bool* claimed) {
  TrialRow t;
  t.campaign_id = campaign_id;
  t.trial_key = fmt::format("k{}", i);
  t.purpose = "candidate";
  *claimed = false;
  std::int64_t id = s.claim_trial(t);
  *claimed = true;
  TrialFinish f;
  f.run_ok = true;
  f.result_json = std::string(16 * 1024, static_cast<char>('a' + i % 26));
  s.finish_trial(id, f);
}

TEST_F(StoreFaultsTest, DiskFullIsAStoreErrorAndTheDatabaseStaysIntact) {
  int written = 0;
  bool claimed = false;
  std::string message;
  {
    Store s(db);
    const std::int64_t cid = make_campaign(s);
    record_trial(s, cid, written++, &claimed);
    // SQLITE_FULL exactly as a full disk gives it: the pager cannot grow the file.
    const int pages = raw_db(s).execAndGet("PRAGMA page_count").getInt();
    raw_db(s).exec(fmt::format("PRAGMA max_page_count = {}", pages + 8));
    for (int i = 0; i < 100 && message.empty(); ++i) {
      try {
        record_trial(s, cid, written, &claimed);
        ++written;
      } catch (const StoreError& e) {
        message = e.what();
      }
    }
    ASSERT_FALSE(message.empty()) << "the size limit was never reached";
    EXPECT_NE(message.find("is full"), std::string::npos) << message;
    EXPECT_NE(message.find(db), std::string::npos) << "names the database: " << message;
    // The connection stays usable: reads see exactly what was committed.
    EXPECT_EQ(static_cast<int>(s.trials(cid).size()), written + (claimed ? 1 : 0));
  }
  EXPECT_EQ(integrity(db), "ok");
  Store again(db);
  auto campaign = again.latest_campaign(false);
  ASSERT_TRUE(campaign);
  int finished = 0, running = 0;
  for (const auto& t : again.trials(campaign->id)) {
    if (t.state == "finished") {
      ++finished;
      EXPECT_EQ(t.result_json.size(), 16u * 1024) << t.trial_key << " half-written";
    } else {
      ++running;
    }
  }
  EXPECT_EQ(finished, written) << "every trial written before the disk filled is intact";
  // A claim that fitted but whose finish did not stays 'running': the next run marks it stale.
  EXPECT_EQ(running, claimed ? 1 : 0);
}

TEST_F(StoreFaultsTest, ControllersOpeningAFreshDatabaseTogetherMigrateItOnce) {
  constexpr int kRounds = 10, kControllers = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = fmt::format("{}/fresh{}.db", dir, round);
    std::atomic<int> ready{0};
    std::vector<std::string> errors(kControllers);
    std::vector<std::int64_t> campaigns(kControllers, 0);
    std::vector<std::thread> threads;
    for (int c = 0; c < kControllers; ++c) {
      threads.emplace_back([&, c] {
        ++ready;
        while (ready.load() < kControllers) std::this_thread::yield();
        try {
          Store s(path);  // each thread its own connection, like separate processes
          campaigns[c] = make_campaign(s);
        } catch (const std::exception& e) {
          errors[c] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int c = 0; c < kControllers; ++c)
      EXPECT_EQ(errors[c], "") << "round " << round << " controller " << c;
    Store s(path, /*read_only=*/true);
    EXPECT_EQ(s.schema_version(), kSchemaVersion);
    EXPECT_EQ(raw_db(s).execAndGet("SELECT count(*) FROM campaigns").getInt(), kControllers);
    EXPECT_EQ(integrity(path), "ok");
  }
}

}  // namespace
}  // namespace sg::agent
