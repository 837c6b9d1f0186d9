// The usage error for a workload or size the trainer does not have: names the closest
// existing ones and lists them all.
#pragma once
#include <string>

#include "agent/protocol/manifest.hpp"

namespace sg::agent {

// "" when the manifest has `workload` with `size`, else e.g. "the trainer has no
// workload 'wma'; did you mean 'wam'? (workloads: wam, lm, lm_osft)".
std::string unknown_target_message(const Manifest& m, const std::string& workload,
                                   const std::string& size);

}  // namespace sg::agent
