// Command-line flags of the trainer's commands: `--name value` or `--name=value`, in
// order (a flag may repeat). Throws BadInputError for a stray argument or a flag
// without its value; to_int for a value that is not a whole integer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sg::trainer {

std::vector<std::pair<std::string, std::string>> parse_flags(const std::vector<std::string>& args);
int64_t to_int(const std::string& flag, const std::string& value);

}  // namespace sg::trainer
