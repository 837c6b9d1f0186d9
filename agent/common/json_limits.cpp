#include "agent/common/json_limits.hpp"

#include <fmt/format.h>

namespace sg::agent {

Problem json_limits_problem(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return fmt::format("is larger than {} bytes ({} bytes)", limits.max_bytes, text.size());
  }
  std::size_t depth = 0, string_start = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
        if (i - string_start > limits.max_string) {
          return fmt::format("has a string longer than {} bytes (at byte {})", limits.max_string,
                             string_start);
        }
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      string_start = i + 1;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return fmt::format("is nested deeper than {} levels (at byte {})", limits.max_depth, i);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  if (in_string && text.size() - string_start > limits.max_string) {
    return fmt::format("has a string longer than {} bytes (at byte {})", limits.max_string,
                       string_start);
  }
  return std::nullopt;
}

}  // namespace sg::agent
