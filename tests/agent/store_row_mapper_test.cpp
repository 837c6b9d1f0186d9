// The store's shared row mapper (agent/store/row_mapper.hpp): one list of (column,
// member) pairs writes the SELECT list and reads rows back in the same order.
#include "agent/store/row_mapper.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

namespace sg::agent {
namespace {

struct Sample {
  std::int64_t id = 0;
  int count = 0;
  bool flag = false;
  double real = 0, real_or_nan = 0;
  std::string text = "unset";
  std::optional<int> maybe_int;
  std::optional<double> maybe_real;
  std::optional<Disposition> maybe_disposition;
  Disposition disposition = Disposition::accepted;
  nlohmann::json doc;
  std::vector<std::int64_t> ids;
  int added_later = 7;
};

const RowMap<Sample>& sample_map() {
  static const RowMap<Sample> map{
      col("id", &Sample::id),
      SG_COLUMNS(Sample, count, flag, real),  // col("count", &Sample::count), ...
      col_or_nan("real_or_nan", &Sample::real_or_nan),
      SG_COLUMNS(Sample, text, maybe_int, maybe_real, maybe_disposition, disposition, doc, ids),
      col("added_later", &Sample::added_later, /*since_version=*/3),
  };
  return map;
}

// The columns named as their members, after a rowid SQLite assigns.
const RowMap<Sample>& written_map() {
  static const RowMap<Sample> map{
      read_only(col("id", &Sample::id)),
      SG_COLUMNS(Sample, count, flag, real, real_or_nan, text, maybe_int, maybe_real,
                 maybe_disposition, disposition, doc, ids),
  };
  return map;
}

class RowMapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.exec(
        "CREATE TABLE samples(id INTEGER, count INTEGER, flag INTEGER, real REAL, "
        "real_or_nan REAL, text TEXT, maybe_int INTEGER, maybe_real REAL, "
        "maybe_disposition TEXT, disposition TEXT, doc TEXT, ids TEXT, added_later INTEGER)");
  }
  std::vector<Sample> read(int schema_version, const std::string& where = "") {
    return query_all(db_,
                     "SELECT " + sample_map().select_list(schema_version) + " FROM samples" +
                         where + " ORDER BY id",
                     sample_map());
  }
  SQLite::Database db_{":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE};
};

TEST_F(RowMapperTest, SelectListNamesEveryColumnInOrder) {
  EXPECT_EQ(sample_map().size(), 13);
  EXPECT_EQ(sample_map().select_list(3),
            "id, count, flag, real, real_or_nan, text, maybe_int, maybe_real, "
            "maybe_disposition, disposition, doc, ids, added_later");
  EXPECT_EQ(sample_map().select_list(3, "s").substr(0, 15), "s.id, s.count, ");
}

TEST_F(RowMapperTest, ReadsEachTypeAsStored) {
  db_.exec(
      "INSERT INTO samples VALUES(5, 3, 1, 'NaN', 2.5, 'hello', 42, '-Inf', 'slower', "
      "'gate_failed', '{\"a\": 1}', '[1, 2, 3]', 9)");
  const auto rows = read(3);
  ASSERT_EQ(rows.size(), 1u);
  const Sample& s = rows[0];
  EXPECT_EQ(s.id, 5);
  EXPECT_EQ(s.count, 3);
  EXPECT_TRUE(s.flag);
  EXPECT_TRUE(std::isnan(s.real));  // non-finite REALs are stored as text
  EXPECT_EQ(s.real_or_nan, 2.5);
  EXPECT_EQ(s.text, "hello");
  EXPECT_EQ(s.maybe_int, 42);
  ASSERT_TRUE(s.maybe_real.has_value());
  EXPECT_TRUE(std::isinf(*s.maybe_real) && *s.maybe_real < 0);
  EXPECT_EQ(s.maybe_disposition, Disposition::slower);
  EXPECT_EQ(s.disposition, Disposition::gate_failed);
  EXPECT_EQ(s.doc, nlohmann::json({{"a", 1}}));
  EXPECT_EQ(s.ids, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(s.added_later, 9);
}

TEST_F(RowMapperTest, NullReadsAsEmptyAndNotMeasuredAsNan) {
  db_.exec(
      "INSERT INTO samples VALUES(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
      "'not json', 'not a list', NULL)");
  const Sample s = read(3).at(0);
  EXPECT_EQ(s.count, 0);
  EXPECT_FALSE(s.flag);
  EXPECT_EQ(s.real, 0.0);
  EXPECT_TRUE(std::isnan(s.real_or_nan));
  EXPECT_EQ(s.text, "");
  EXPECT_FALSE(s.maybe_int.has_value());
  EXPECT_FALSE(s.maybe_real.has_value());
  EXPECT_FALSE(s.maybe_disposition.has_value());
  EXPECT_EQ(s.disposition, Disposition::crash);  // unknown or missing: crash
  EXPECT_TRUE(s.doc.is_discarded());
  EXPECT_TRUE(s.ids.empty());
}

TEST_F(RowMapperTest, ColumnsNewerThanTheFileReadAsNull) {
  db_.exec("INSERT INTO samples(id, added_later) VALUES(1, 9)");
  EXPECT_EQ(sample_map().select_list(2).substr(sample_map().select_list(2).size() - 6), ", NULL");
  EXPECT_EQ(read(2).at(0).added_later, 0);
  EXPECT_EQ(read(3).at(0).added_later, 9);
}

TEST_F(RowMapperTest, ReadsFromAnOffsetAndEveryRow) {
  db_.exec("INSERT INTO samples(id, text) VALUES(1, 'a'), (2, 'b')");
  SQLite::Statement q(
      db_, "SELECT 'before', " + sample_map().select_list() + " FROM samples ORDER BY id");
  std::vector<std::string> texts;
  while (q.executeStep()) texts.push_back(sample_map().read(q, /*first=*/1).text);
  EXPECT_EQ(texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(read(3, " WHERE id > 5").size(), 0u);
}

TEST_F(RowMapperTest, InsertWritesBackWhatItReadsButNotTheReadOnlyColumns) {
  const std::string sql = written_map().insert_sql("INSERT INTO samples");
  EXPECT_EQ(sql,
            "INSERT INTO samples(count, flag, real, real_or_nan, text, maybe_int, maybe_real, "
            "maybe_disposition, disposition, doc, ids) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  db_.exec(
      "INSERT INTO samples VALUES(5, 3, 1, 'NaN', 2.5, 'hello', NULL, '-Inf', 'slower', "
      "'gate_failed', '{\"a\":1}', '[1,2,3]', 9)");
  const Sample stored = read(3).at(0);
  SQLite::Statement st(db_, sql);
  written_map().insert(st, stored);
  written_map().insert(st, stored);  // a prepared insert runs again
  // Each written column holds one value, of one type, in all three rows.
  for (const std::string column :
       {"count", "flag", "real", "real_or_nan", "text", "maybe_int", "maybe_real",
        "maybe_disposition", "disposition", "doc", "ids"}) {
    EXPECT_EQ(
        query_one(db_, "SELECT COUNT(DISTINCT quote(" + column + ")) FROM samples", first_int64), 1)
        << column;
  }
  EXPECT_EQ(query_one(db_, "SELECT COUNT(*) FROM samples WHERE id IS NULL AND added_later IS NULL",
                      first_int64),
            2);
}

TEST_F(RowMapperTest, AnIdOrNullColumnWritesZeroAsNullAndReadsItAsZero) {
  static const RowMap<Sample> map{id_or_null("id", &Sample::id)};
  Sample s;
  map.insert(db_, "INSERT INTO samples", s);
  s.id = 4;
  map.insert(db_, "INSERT INTO samples", s);
  EXPECT_EQ(map.select_all(db_, "FROM samples WHERE id IS NULL").size(), 1u);
  std::vector<std::int64_t> ids;
  for (const auto& r : map.select_all(db_, "FROM samples ORDER BY id")) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{0, 4}));
}

}  // namespace
}  // namespace sg::agent
