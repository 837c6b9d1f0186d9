// The store is the only place with SQL (docs/controller.md, "Store"): no statement in
// agent/, benchmarks/ or trainer/ outside agent/store/, and no file there includes the
// store's internal headers (its connection, row mapper, value encoding).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// Source files under `dir` (relative to the source tree) outside agent/store/.
std::vector<fs::path> sources_outside_store(const std::string& dir) {
  const fs::path root(SPEEDGATE_SOURCE_DIR);
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    if (rel.rfind("agent/store/", 0) != 0) out.push_back(e.path());
  }
  return out;
}

// "path:line: text" for each line of the sources matching `pattern`.
std::vector<std::string> matches(const std::regex& pattern) {
  std::vector<std::string> found;
  for (const char* dir : {"agent", "benchmarks", "trainer"}) {
    for (const auto& p : sources_outside_store(dir)) {
      std::ifstream in(p);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (std::regex_search(line, pattern)) {
          found.push_back(p.string() + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  return found;
}

TEST(StoreLayering, NoSqlOutsideTheStore) {
  const auto found = matches(std::regex("SELECT|INSERT INTO|UPDATE .* SET|CREATE TABLE"));
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(StoreLayering, NoStoreInternalsOutsideTheStore) {
  const auto found = matches(std::regex(
      R"(#include "agent/store/(connection|sql_value|statement|row_mapper|row_maps|queries/query_sql)\.hpp")"));
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(StoreLayering, TheCheckSeesTheStoreItself) {
  // The scan must not pass by reading nothing: the store's own files hold SQL.
  std::ifstream in(std::string(SPEEDGATE_SOURCE_DIR) + "/agent/store/trials.cpp");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(std::regex_search(text, std::regex("UPDATE .* SET")));
  EXPECT_FALSE(sources_outside_store("agent").empty());
}

}  // namespace
