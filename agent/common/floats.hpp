// Exact float32 bit patterns as the protocol writes them (lower-case hex, no 0x).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace sg::agent {

std::optional<std::uint32_t> parse_bits_hex(const std::string& hex);
float float_from_bits(std::uint32_t bits);
std::string bits_hex(float value);

}  // namespace sg::agent
