// The store's SQLite connection, for the store's own modules (agent/store/**: the
// per-table files and the read-only query modules). Nothing outside agent/store/
// includes this; tests may, to inspect or damage a file on purpose.
#pragma once
#include <SQLiteCpp/SQLiteCpp.h>

#include "agent/store/store.hpp"

namespace sg::agent::store_detail {

SQLite::Database& connection(Store& store);

}  // namespace sg::agent::store_detail
