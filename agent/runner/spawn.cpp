#include "agent/runner/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "agent/common/problem.hpp"
#include "agent/common/proc_scan.hpp"

namespace sg::agent {

std::mutex g_members_mu;
std::set<int> g_members;

namespace {

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool make_pipe(Fd& r, Fd& w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  r.fd = p[0];
  w.fd = p[1];
  return true;
}

// Everything the child needs, prepared before fork: between fork and exec the child
// of a multithreaded parent may only make async-signal-safe calls.
struct ChildPlan {
  const char* exe = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  pid_t leader = 0;  // 0: the child leads a new group
  pid_t parent = 0;
  int in = -1, out = -1, err = -1, go = -1, report = -1;
  char* pgid_digits = nullptr;  // leader only: where its pid goes in the token entry
};

[[noreturn]] void child_fail(const ChildPlan& c) {
  const int e = errno;
  ssize_t ignore = ::write(c.report, &e, sizeof e);
  (void)ignore;
  ::_exit(127);
}

[[noreturn]] void child_main(const ChildPlan& c) {
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
  if (::setpgid(0, c.leader) != 0) child_fail(c);
  // Killed with the controller, also by SIGKILL; checked after, in case it died before.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(c);
  if (::getppid() != c.parent) ::_exit(127);
  if (::dup2(c.in, 0) < 0 || ::dup2(c.out, 1) < 0 || ::dup2(c.err, 2) < 0) child_fail(c);
#ifdef SYS_close_range
  ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);  // no other fd leaks in
#endif
  if (c.pgid_digits) {
    char buf[16];
    int n = 0;
    for (unsigned v = static_cast<unsigned>(::getpid()); v > 0 && n < 16; v /= 10)
      buf[n++] = static_cast<char>('0' + v % 10);
    for (int i = 0; i < n; ++i) c.pgid_digits[i] = buf[n - 1 - i];
    c.pgid_digits[n] = '\0';
  }
  char go = 0;
  ssize_t r;
  do r = ::read(c.go, &go, 1);
  while (r < 0 && errno == EINTR);
  if (r != 1) ::_exit(127);  // the parent gave up (or died) before the start
  ::execve(c.exe, c.argv, c.envp);
  child_fail(c);
}

// The descriptors of one spawn: the child's stdin (/dev/null), stdout and stderr, the
// pipe it waits on before exec and the one a failed exec reports its errno on.
struct SpawnPipes {
  Fd in, out_r, out_w, err_r, err_w, go_r, go_w, rep_r, rep_w;

  // False (errno set) when a descriptor cannot be created.
  bool open() {
    in.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return !(in.fd < 0 || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) ||
             !make_pipe(go_r, go_w) || !make_pipe(rep_r, rep_w));
  }
  // After fork: the ends the child uses are the child's alone.
  void close_child_ends() {
    in.reset();
    out_w.reset();
    err_w.reset();
    go_r.reset();
    rep_w.reset();
  }
};

// argv and envp for execve, built before fork. Without a leader the token entry ends in
// reserved digits where the child writes its own pid (the group id). Neither copied nor
// moved: argv and envp point into args and env.
class ChildCommand {
 public:
  ChildCommand(const ProcessSpec& spec, pid_t self, pid_t leader) {
    args_.push_back(spec.exe);
    args_.insert(args_.end(), spec.args.begin(), spec.args.end());
    for (const auto& [k, v] : spec.env) {
      if (k != kSupervisorVariable) env_.push_back(k + "=" + v);
    }
    // The leader writes its own pid (the group id) into the reserved digits.
    const std::string unset = supervisor_token(self, 0);  // "...:0": the leader replaces the 0
    env_.push_back(leader ? supervisor_token(self, leader)
                          : unset.substr(0, unset.size() - 1) + std::string(16, '\0'));
    for (auto& a : args_) argv_.push_back(a.data());
    argv_.push_back(nullptr);
    for (auto& e : env_) envp_.push_back(e.data());
    envp_.push_back(nullptr);
    if (!leader) pgid_digits_ = env_.back().data() + unset.size() - 1;
  }
  ChildCommand(const ChildCommand&) = delete;
  ChildCommand& operator=(const ChildCommand&) = delete;

  // The plan for a child of `parent` joining `leader`'s group, on the child ends of `pipes`.
  ChildPlan plan(pid_t leader, pid_t parent, const SpawnPipes& pipes) const {
    ChildPlan plan;
    plan.exe = args_.front().c_str();
    plan.argv = argv_.data();
    plan.envp = envp_.data();
    plan.leader = leader;
    plan.parent = parent;
    plan.in = pipes.in.fd;
    plan.out = pipes.out_w.fd;
    plan.err = pipes.err_w.fd;
    plan.go = pipes.go_r.fd;
    plan.report = pipes.rep_w.fd;
    plan.pgid_digits = pgid_digits_;
    return plan;
  }

 private:
  std::vector<std::string> args_, env_;
  std::vector<char*> argv_, envp_;
  char* pgid_digits_ = nullptr;
};

// Forks under the members lock, so the child is registered before anyone can see it.
// Returns fork's result in the parent; the child never returns.
pid_t fork_member(const ChildPlan& plan) {
  std::lock_guard<std::mutex> lock(g_members_mu);
  const pid_t pid = ::fork();
  if (pid == 0) child_main(plan);
  if (pid > 0) g_members.insert(pid);
  return pid;
}

// Kills and reaps a member that will not run (its group too: a new group has no other
// member yet).
void abandon(pid_t pid, pid_t pgid) {
  ::kill(-pgid, SIGKILL);
  ::kill(pid, SIGKILL);
  int st;
  ::waitpid(pid, &st, 0);
  std::lock_guard<std::mutex> lock(g_members_mu);
  g_members.erase(pid);
}

// Lets the waiting child exec. nullopt when it did; else why it did not.
Problem let_exec(SpawnPipes& pipes, const std::string& exe) {
  const char go = 'g';
  if (::write(pipes.go_w.fd, &go, 1) != 1) {
    return std::string("cannot start the child: ") + ::strerror(errno);
  }
  pipes.go_w.reset();
  int child_errno = 0;
  ssize_t n;
  do n = ::read(pipes.rep_r.fd, &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    return fmt::format("cannot execute '{}': {}", exe, ::strerror(child_errno));
  }
  return std::nullopt;
}

}  // namespace

// Forks one member, joins it to `leader`'s group (0: a new one), runs `on_started` for
// a new group while the child waits, then lets it exec. Throws what on_started throws.
Started spawn(const ProcessSpec& spec, pid_t leader, const std::function<void(int)>& on_started) {
  Started s;
  const pid_t self = ::getpid();
  ChildCommand command(spec, self, leader);
  SpawnPipes pipes;
  if (!pipes.open()) {
    s.error = std::string("cannot create pipes: ") + ::strerror(errno);
    return s;
  }
  const pid_t pid = fork_member(command.plan(leader, self, pipes));
  if (pid < 0) {
    s.error = std::string("fork failed: ") + ::strerror(errno);
    return s;
  }
  pipes.close_child_ends();
  const pid_t pgid = leader ? leader : pid;
  ::setpgid(pid, pgid);  // also from the parent: the group exists when we return
  if (!leader && on_started) {
    try {
      on_started(static_cast<int>(pgid));
    } catch (...) {
      abandon(pid, pgid);
      throw;
    }
  }
  if (Problem problem = let_exec(pipes, spec.exe)) {
    s.error = *problem;
    abandon(pid, pgid);
    return s;
  }
  s.pid = pid;
  s.out = pipes.out_r.fd;
  s.err = pipes.err_r.fd;
  pipes.out_r.fd = pipes.err_r.fd = -1;
  return s;
}

}  // namespace sg::agent
