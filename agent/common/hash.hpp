// A stable text hash for keys and fingerprints: FNV-1a 64, as 16 hex digits. The same on
// every build and run (std::hash is not), so it may go into stored keys.
#pragma once

#include <string>
#include <string_view>

namespace sg::agent {

std::string fnv1a64_hex(std::string_view text);

}  // namespace sg::agent
