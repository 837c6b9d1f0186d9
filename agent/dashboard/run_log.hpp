// Reading a trainer run's log for /logs/<run>/<stream> without trusting the trainer: it
// owns its run directory and may have replaced a log with a link, a FIFO or a hard link
// to any file. Only a regular, singly linked file directly inside c<campaign>/t<run>
// under a runs root is read, each component opened with O_NOFOLLOW (openat walk).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sg::agent::dashboard {

// Where a stored log path may live: ROOT/c<campaign>/t<run>/<file>.
struct LogLocation {
  std::string root;  // a runs root (opened following links: the operator chose it)
  std::int64_t campaign_id = 0, run_id = 0;
  std::string file;  // one path component
};

// The places a stored path (absolute, or relative to the controller's working directory)
// may name, given the DB's path: its own prefix if absolute, then <db dir>/<prefix> and
// <db dir>/runs (the default runs root), so links work from any directory serve runs
// in. Empty when the path is not .../c<N>/t<M>/<file>.
std::vector<LogLocation> log_locations(const std::string& db_path, const std::string& stored_path);

// The last `max_bytes` of the file at `where`; nullopt if any component is missing, a
// link, not a directory / regular file, or the file has more than one link.
std::optional<std::string> read_log_tail(const LogLocation& where, std::size_t max_bytes);

}  // namespace sg::agent::dashboard
