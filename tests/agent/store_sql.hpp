// Tests' access to a Store's own connection (agent/store/connection.hpp), to inspect or
// damage a file in ways the Store's interface rightly does not offer.
#pragma once
#include <SQLiteCpp/SQLiteCpp.h>

#include "agent/store/connection.hpp"
#include "agent/store/sql_value.hpp"

namespace sg::agent {

inline SQLite::Database& raw_db(Store& store) { return store_detail::connection(store); }

}  // namespace sg::agent
