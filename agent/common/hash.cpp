#include "agent/common/hash.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace sg::agent {

std::string fnv1a64_hex(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace sg::agent
