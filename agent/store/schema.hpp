// Store schema: the current version and the ordered migrations that reach it.
#pragma once
#include <string>
#include <vector>

namespace sg::agent {

constexpr int kSchemaVersion = 3;  // 2: nightly runs (docs/nightly.md); 3: executors (docs/controller.md)

struct Migration {
  int to_version;
  std::string sql;
};

const char* schema_v1_sql();
const char* schema_v2_sql();
const char* schema_v3_sql();
// Every migration's SQL in order: what results/schema.sql holds.
std::string schema_sql();
std::vector<Migration> migrations();

}  // namespace sg::agent
