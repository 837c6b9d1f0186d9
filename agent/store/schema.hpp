// Store schema: the current version and the ordered migrations that reach it.
#pragma once
#include <string>
#include <vector>

namespace sg::agent {

constexpr int kSchemaVersion =
    6;  // 2: nightly runs (docs/nightly.md); 3: executors; 4: kernel timings; 5: target finals
        // (docs/controller.md); 6: speed intervals, host noise, rounding bands

struct Migration {
  int to_version;
  std::string sql;
};

// results/schema.sql as embedded by the build: every migration's SQL in order.
std::string schema_sql();
// That text cut at each migration header; throws std::logic_error when the number of
// versions is not kSchemaVersion.
const std::vector<Migration>& migrations();

}  // namespace sg::agent
