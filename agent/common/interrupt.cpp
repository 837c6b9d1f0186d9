#include "agent/common/interrupt.hpp"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include <atomic>
#include <mutex>
#include <string>

namespace sg::agent {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

void on_stop_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
}

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error(std::string("interrupted by ") + ::strsignal(signal) +
                         "; running trials were ended"),
      signal_(signal) {}

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);  // a child that died before its start handshake: EPIPE, not death
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  });
}

int interrupt_signal() { return g_signal.load(); }

void throw_if_interrupted() {
  if (int sig = g_signal.load()) throw Interrupted(sig);
}

}  // namespace sg::agent
