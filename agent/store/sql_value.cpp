#include "agent/store/sql_value.hpp"

#include <cmath>
#include <cstdlib>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

namespace sg::agent {

void bind_real(SQLite::Statement& st, int index, double v) {
  if (std::isnan(v)) {
    st.bind(index, std::string("NaN"));
  } else if (std::isinf(v)) {
    st.bind(index, std::string(v > 0 ? "Inf" : "-Inf"));
  } else {
    st.bind(index, v);
  }
}

double column_real(const SQLite::Column& c) {
  if (c.isNull()) return 0.0;
  if (c.getType() == SQLITE_TEXT) {
    const std::string s = c.getString();
    if (s == "NaN") return std::nan("");
    if (s == "Inf") return INFINITY;
    if (s == "-Inf") return -INFINITY;
    return std::strtod(s.c_str(), nullptr);
  }
  return c.getDouble();
}

double column_real_or_nan(const SQLite::Column& c) {
  return c.isNull() ? std::nan("") : column_real(c);
}

std::string column_text(const SQLite::Column& c) {
  return c.isNull() ? std::string() : c.getString();
}

std::string ids_json(const std::vector<std::int64_t>& ids) { return nlohmann::json(ids).dump(); }

std::vector<std::int64_t> ids_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::int64_t> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_number_integer()) out.push_back(v.get<std::int64_t>());
  }
  return out;
}

}  // namespace sg::agent
