// The usage error for a workload or size the trainer does not have: names the closest
// existing ones and lists them all.
#pragma once
#include <string>

#include "agent/common/problem.hpp"
#include "agent/protocol/manifest.hpp"

namespace sg::agent {

// nullopt when the manifest has `workload` with `size`, else e.g. "the trainer has no
// workload 'wma'; did you mean 'wam'? (workloads: wam, lm, lm_osft)".
Problem unknown_target_problem(const Manifest& m, const std::string& workload,
                               const std::string& size);

}  // namespace sg::agent
