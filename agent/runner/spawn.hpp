// Forking one member of a supervised process group (process.hpp): the start handshake,
// the supervisor token in its environment and the registry of running members. Internal
// to agent/runner/process.cpp.
#pragma once
#include <sys/types.h>

#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "agent/runner/process.hpp"

namespace sg::agent {

// The members of every group running now, over all threads: a child of this process
// that is not one of them is a stray (a reparented descendant of some trial). Forks
// happen under the lock, so a member is registered before anyone can see it.
extern std::mutex g_members_mu;
extern std::set<int> g_members;

// A member as spawn leaves it: running (pid set) or not started (error says why).
struct Started {
  pid_t pid = 0;
  std::string error;
  int out = -1, err = -1;  // read ends, owned by the caller
};

// Forks one member, joins it to `leader`'s group (0: a new one), runs `on_started` for
// a new group while the child waits, then lets it exec. Throws what on_started throws.
Started spawn(const ProcessSpec& spec, pid_t leader, const std::function<void(int)>& on_started);

}  // namespace sg::agent
