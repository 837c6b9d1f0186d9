// Exact float32 bit patterns as the protocol writes them (lower-case hex, no 0x); the
// writing side is sg::bits_hex / sg::float_bits (common/result/result_json.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace sg::agent {

std::optional<std::uint32_t> parse_bits_hex(const std::string& hex);
float float_from_bits(std::uint32_t bits);

}  // namespace sg::agent
