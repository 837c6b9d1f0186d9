// Finding a trial's processes through /proc, also those that left its process group
// (setsid) or lost their parent: every rank carries a supervisor token in its
// environment (inherited by its descendants), and parent chains are followed from the
// ranks. Linux only; a process that clears its environment and leaves the chain is
// found only while it is a child of this process (the controller is a subreaper).
#pragma once
#include <set>
#include <string>
#include <vector>

namespace sg::agent {

// The environment entry every rank of a group gets: SPEEDGATE_SUPERVISOR=<controller pid>:<pgid>.
inline constexpr char kSupervisorVariable[] = "SPEEDGATE_SUPERVISOR";
std::string supervisor_token(int controller_pid, int pgid);

// A /proc file read with plain read(2) (a process may vanish mid-read: ESRCH, which
// std::filebuf reports by throwing). At most `max` bytes; empty when unreadable.
std::string read_proc(const std::string& path, std::size_t max);

struct ProcEntry {
  int pid = 0, ppid = 0, pgid = 0;
  char state = '?';
};
std::vector<ProcEntry> list_processes();

// True when /proc/<pid>/environ has the entry `entry` (or one starting with it when
// `prefix`). Unreadable (gone, a zombie, another user's): false.
bool environ_has(int pid, const std::string& entry, bool prefix);

// The pids (never this process) in group `pgid` (0: none), with the environment entry
// `token` (or one starting with it when `token_is_prefix`; empty: not checked), or
// descending from one of `roots`.
std::set<int> find_processes(int pgid, const std::string& token, bool token_is_prefix,
                             const std::set<int>& roots);

}  // namespace sg::agent
