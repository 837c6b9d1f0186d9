// Runs `TRAINER describe --json` (protocol §1) under the same supervisor as trials.
#pragma once
#include <string>

#include "agent/protocol/manifest.hpp"

namespace sg::agent {

// How long `describe` may take before its process group is killed: 120 s unless the
// environment sets SPEEDGATE_DESCRIBE_TIMEOUT_S (seconds, in (0, 86400]; else UsageError).
inline constexpr char kDescribeTimeoutVariable[] = "SPEEDGATE_DESCRIBE_TIMEOUT_S";
inline constexpr double kDescribeTimeoutS = 120;
double describe_timeout_s();

// Throws UsageError naming the trainer when it cannot be run, does not answer within
// describe_timeout_s(), or its manifest is bad; Interrupted on a stop signal.
Manifest describe_trainer(const std::string& trainer);

}  // namespace sg::agent
