// Small file helpers: atomic writes (temp in the same directory, fsync, rename)
// and whole-file reads with a size cap.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace sg::agent {

// Writes through `.NAME.tmp.<pid>.XXXXXX` beside the target. Throws std::runtime_error
// naming the path on failure; the target is untouched and the temp removed then. A
// success also removes the temps of NAME that dead writers (a killed process) left.
void write_file_atomic(const std::string& path, const std::string& content);

// nullopt when the file does not exist or is larger than max_bytes.
std::optional<std::string> read_file(const std::string& path, std::size_t max_bytes = 64 << 20);

}  // namespace sg::agent
