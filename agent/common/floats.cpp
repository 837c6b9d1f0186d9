#include "agent/common/floats.hpp"

#include <cstring>

namespace sg::agent {

std::optional<std::uint32_t> parse_bits_hex(const std::string& hex) {
  if (hex.empty() || hex.size() > 8) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : hex) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<std::uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<std::uint32_t>(c - 'a' + 10);
    else
      return std::nullopt;
  }
  return v;
}

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace sg::agent
