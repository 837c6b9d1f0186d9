// Runs child processes under supervision: one process group for all of them (the
// first child leads it), stdout/stderr of each drained asynchronously into its log
// files, a deadline (SIGTERM to the group, grace, SIGKILL), and each exit decoded into
// code vs signal. A member that fails while other members still run ends the group
// the same way (the ranks of a distributed trial live and die together). No shell
// anywhere: argv and the environment are passed as lists.
//
// Start handshake: each child joins the group, asks for SIGKILL when this process dies
// (PR_SET_PDEATHSIG) and blocks on a pipe; on_started(pgid) runs before the first
// child may exec. Every child's environment carries supervisor_token(getpid(), pgid)
// (agent/common/proc_scan.hpp). When the group ends, its stray descendants (setsid
// included: this process is a child subreaper) are killed and reaped with it. A stop
// signal to this process (agent/common/interrupt.hpp) ends the group the same way.
// REQUIRES: the process starts children only through this supervisor (with no group
// running, any other child of ours is taken for a reparented stray and killed).
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sg::agent {

struct ProcessSpec {
  std::string exe;
  std::vector<std::string> args;
  // The complete environment of the child; nothing is inherited implicitly.
  std::vector<std::pair<std::string, std::string>> env;
  std::string stdout_log, stderr_log;
  // 0 = no deadline.
  std::chrono::milliseconds deadline{0};
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  // After the main child exits, how long to wait for pipes held by grandchildren
  // before killing the group and closing them.
  std::chrono::milliseconds drain_after_exit{std::chrono::seconds(2)};
  // Called about once a second while the child runs (heartbeat watching).
  std::function<void()> on_tick;
  // Called with the new group's id after the group exists and before any member can
  // exec (record it where a later controller finds it). An exception kills the group
  // and propagates.
  std::function<void(int pgid)> on_started;
};

struct ProcessOutcome {
  bool started = false;
  std::string start_error;  // when !started (missing binary, not executable)
  int exit_code = -1;       // valid when !signaled
  int signal = 0;           // valid when signaled
  bool signaled = false;
  bool deadline_hit = false;  // we sent SIGTERM/SIGKILL because of the deadline
  bool interrupted = false;   // we ended the group because this process got a stop signal
  int pid = 0;
  double wall_s = 0;
  std::size_t stdout_bytes = 0, stderr_bytes = 0;
};

ProcessOutcome run_process(const ProcessSpec& spec);

struct GroupOutcome {
  std::vector<ProcessOutcome> members;  // one per spec, in order
  int pgid = 0;                         // 0 when nothing started
  // The member whose failure (non-zero exit or a signal, before we signalled anyone)
  // ended the group early; -1 when none did. Several failing in the same poll: a
  // signalled one wins over an exit code (peers of a dead rank exit with an error).
  int failed_member = -1;
  bool deadline_hit = false;
  bool interrupted = false;
};

// Runs every spec in one process group. The group-wide controls (deadline, grace,
// drain_after_exit, on_tick, on_started) come from specs[0]. REQUIRES: !specs.empty().
// A member that cannot be started kills the members already running.
GroupOutcome run_process_group(const std::vector<ProcessSpec>& specs);

// The current environment without any SG_* variable (the trainer must see only
// the switches we set).
std::vector<std::pair<std::string, std::string>> inherited_env_without_switches();

// True when a process with this pid exists (kill(pid, 0)).
bool process_alive(int pid);

}  // namespace sg::agent
