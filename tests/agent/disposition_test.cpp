// The disposition enum is mirrored 1:1 by the schema's CHECK constraints.
#include "agent/common/disposition.hpp"

#include <gtest/gtest.h>

#include "agent/store/schema.hpp"

namespace sg::agent {
namespace {

TEST(Disposition, RoundTripsAllNames) {
  std::size_t n = 0;
  const Disposition* all = all_dispositions(&n);
  EXPECT_EQ(n, 11u);
  for (std::size_t i = 0; i < n; ++i) {
    auto back = disposition_from_string(to_string(all[i]));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, all[i]);
  }
  EXPECT_FALSE(disposition_from_string("passed").has_value());
}

TEST(Disposition, SchemaChecksListEveryName) {
  const std::string& sql = migrations().front().sql;  // version 1 creates the tables
  std::size_t n = 0;
  const Disposition* all = all_dispositions(&n);
  for (std::size_t i = 0; i < n; ++i) {
    std::string quoted = "'" + std::string(to_string(all[i])) + "'";
    std::size_t first = sql.find(quoted);
    ASSERT_NE(first, std::string::npos) << quoted;
    EXPECT_NE(sql.find(quoted, first + 1), std::string::npos) << quoted << " in both CHECKs";
  }
}

}  // namespace
}  // namespace sg::agent
