// Bounds on JSON a trainer writes (result, manifest, kernel-trial result, heartbeat),
// checked by a linear pre-scan before any parser builds a tree: a document nested
// 100,000 deep or holding a 100 MB string is refused by name, never parsed.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "agent/common/problem.hpp"

namespace sg::agent {

struct JsonLimits {
  std::size_t max_bytes = 16u << 20;   // the whole document
  std::size_t max_depth = 64;          // nested arrays and objects
  std::size_t max_string = 64u << 10;  // one string or key, in bytes as written
};

// The caps docs/protocol.md documents for each document a trainer writes.
constexpr JsonLimits kResultLimits{};
constexpr JsonLimits kManifestLimits{};
constexpr JsonLimits kHeartbeatLimits{64u << 10, 8, 4u << 10};

// nullopt when `text` is within `limits`, else what is exceeded ("is nested deeper than 64
// levels ..."). Does not validate the JSON itself; the parser does that afterwards.
Problem json_limits_problem(std::string_view text, const JsonLimits& limits);

}  // namespace sg::agent
