// The migration list, cut from results/schema.sql, which the build embeds as text
// (agent/store/schema_sql.hpp.in): version 1, then one part per migration, each part
// starting with its "-- speedgate store, ... schema version N" header line.
#include "agent/store/schema.hpp"

#include <stdexcept>
#include <string_view>

#include "agent/store/schema_sql.hpp"

namespace sg::agent {
namespace {

constexpr std::string_view kMigrationHeader = "\n-- speedgate store, migration to schema version ";

std::vector<Migration> cut_migrations() {
  const std::string_view text(kSchemaSqlText);
  std::vector<Migration> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t next = text.find(kMigrationHeader, start);
    const std::size_t end = next == std::string_view::npos ? text.size() : next + 1;
    out.push_back(
        Migration{static_cast<int>(out.size()) + 1, std::string(text.substr(start, end - start))});
    start = end;
  }
  if (static_cast<int>(out.size()) != kSchemaVersion) {
    throw std::logic_error("results/schema.sql has " + std::to_string(out.size()) +
                           " versions, kSchemaVersion is " + std::to_string(kSchemaVersion));
  }
  return out;
}

}  // namespace

std::string schema_sql() { return kSchemaSqlText; }

const std::vector<Migration>& migrations() {
  // migrations()[i] takes user_version i to i + 1.
  static const std::vector<Migration> all = cut_migrations();
  return all;
}

}  // namespace sg::agent
