// The disposition enum is mirrored 1:1 by the schema's CHECK constraints.
#include "agent/common/disposition.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <SQLiteCpp/SQLiteCpp.h>

#include "agent/store/store.hpp"
#include "test_util.hpp"

namespace sg::agent {
namespace {

TEST(Disposition, RoundTripsAllNames) {
  std::size_t n = 0;
  const Disposition* all = all_dispositions(&n);
  EXPECT_EQ(n, 12u);
  for (std::size_t i = 0; i < n; ++i) {
    auto back = disposition_from_string(to_string(all[i]));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, all[i]);
  }
  EXPECT_FALSE(disposition_from_string("passed").has_value());
}

// The CHECKs of a migrated database (every migration applied, as a store opens it).
TEST(Disposition, SchemaChecksListEveryName) {
  const std::string dir = test::make_temp_dir("disposition_schema");
  { Store store(dir + "/db.sqlite"); }
  SQLite::Database db(dir + "/db.sqlite", SQLite::OPEN_READONLY);
  std::size_t n = 0;
  const Disposition* all = all_dispositions(&n);
  for (const char* table : {"trials", "evaluations", "target_finals"}) {
    SQLite::Statement q(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?");
    q.bind(1, table);
    ASSERT_TRUE(q.executeStep()) << table;
    const std::string sql = q.getColumn(0).getString();
    for (std::size_t i = 0; i < n; ++i) {
      const std::string quoted = "'" + std::string(to_string(all[i])) + "'";
      EXPECT_NE(sql.find(quoted), std::string::npos) << quoted << " in " << table << "'s CHECK";
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sg::agent
