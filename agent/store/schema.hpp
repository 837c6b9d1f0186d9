// Store schema: the current version and the ordered migrations that reach it.
#pragma once
#include <string>
#include <vector>

namespace sg::agent {

constexpr int kSchemaVersion = 1;

struct Migration {
  int to_version;
  std::string sql;
};

const char* schema_v1_sql();
std::vector<Migration> migrations();

}  // namespace sg::agent
