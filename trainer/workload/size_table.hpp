// A workload's size table (the configs of its --size names, in table order): the names and
// the lookup by name that lm_config.cpp and wam_config.cpp share.
#pragma once

#include "common/suggest/suggest.hpp"
#include "trainer/errors.hpp"

#include <string>
#include <vector>

namespace sg::trainer {

// Every config's name, in table order.
template <class Config>
std::vector<std::string> size_names(const std::vector<Config>& table) {
  std::vector<std::string> out;
  for (const auto& c : table) out.push_back(c.name);
  return out;
}

// The config named `size`. Throws BadInputError "unknown size '<size>' of workload
// <workload>" with a suggestion and the sizes there are.
template <class Config>
const Config& find_size(const std::vector<Config>& table, const std::string& size,
                        const char* workload) {
  for (const auto& c : table) {
    if (c.name == size) return c;
  }
  const auto names = size_names(table);
  throw BadInputError("unknown size '" + size + "' of workload " + workload +
                      sg::did_you_mean(size, names) + " (sizes: " + sg::join_names(names) + ")");
}

}  // namespace sg::trainer
