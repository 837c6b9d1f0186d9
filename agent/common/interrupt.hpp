// Stop requests to the controller: SIGTERM, SIGINT and SIGHUP only set a flag. The
// process supervisor polls it and ends the running trial groups (TERM, grace, KILL);
// the next executor call or trial claim throws Interrupted, which the CLI turns into
// exit 128 + signal. Trials ended this way are recorded `killed` with a reason that
// starts with kInterruptedReason, and are re-queued by the next controller.
#pragma once
#include <stdexcept>

namespace sg::agent {

inline constexpr char kInterruptedReason[] = "interrupted: ";

class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }
  int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

// Idempotent; also makes this process a child subreaper (descendants of a trial that
// lose their parent are reparented here, where the supervisor finds them) and ignores
// SIGPIPE (children get the default back before exec).
void install_interrupt_handlers();
// The first stop signal received, 0 when none.
int interrupt_signal();
// Throws Interrupted when a stop signal was received.
void throw_if_interrupted();

}  // namespace sg::agent
