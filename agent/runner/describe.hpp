// Runs `TRAINER describe --json` (protocol §1) under the same supervisor as trials.
#pragma once
#include <string>

#include "agent/manifest/manifest.hpp"

namespace sg::agent {

// Throws UsageError naming the trainer when it cannot be run or its manifest is bad.
Manifest describe_trainer(const std::string& trainer);

}  // namespace sg::agent
