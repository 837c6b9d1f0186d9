// A JSON array built from a sequence of rows, one element per row in order, as the
// report, nightly and protocol writers emit their lists of records.
#pragma once
#include <nlohmann/json.hpp>

namespace sg::agent {

// `to_json(row)` gives each row's element.
template <class Rows, class ToJson>
nlohmann::json json_array(const Rows& rows, ToJson to_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) out.push_back(to_json(row));
  return out;
}

}  // namespace sg::agent
