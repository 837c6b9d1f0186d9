#include "agent/protocol/unknown_target.hpp"

#include <fmt/format.h>

#include "common/suggest/suggest.hpp"

namespace sg::agent {

Problem unknown_target_problem(const Manifest& m, const std::string& workload,
                               const std::string& size) {
  if (m.find_size(workload, size)) return std::nullopt;
  auto it = m.workloads.find(workload);
  if (it == m.workloads.end()) {
    std::vector<std::string> names;
    for (const auto& [w, sizes] : m.workloads) names.push_back(w);
    return fmt::format("the trainer has no workload '{}'{} (workloads: {})", workload,
                       did_you_mean(workload, names), join_names(names));
  }
  std::vector<std::string> sizes;
  for (const auto& s : it->second) sizes.push_back(s.name);
  return fmt::format("workload '{}' has no size '{}'{} (sizes: {})", workload, size,
                     did_you_mean(size, sizes), join_names(sizes));
}

}  // namespace sg::agent
