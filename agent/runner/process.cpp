#include "agent/runner/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <boost/asio.hpp>

#include "agent/common/interrupt.hpp"
#include "agent/common/proc_scan.hpp"

extern char** environ;

namespace sg::agent {
namespace {

// Reads one descriptor to EOF asynchronously, appending to a log file.
class Drain : public std::enable_shared_from_this<Drain> {
 public:
  Drain(boost::asio::io_context& ioc, int fd, const std::string& path)
      : sd_(ioc, fd), out_(path, std::ios::binary | std::ios::trunc) {}
  void start() { read(); }
  void close() {
    boost::system::error_code ignore;
    sd_.close(ignore);
  }
  bool done() const { return done_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void read() {
    auto self = shared_from_this();
    sd_.async_read_some(boost::asio::buffer(buf_),
                        [self](const boost::system::error_code& ec, std::size_t n) {
                          if (n > 0) {
                            self->out_.write(self->buf_.data(), static_cast<std::streamsize>(n));
                            self->bytes_ += n;
                          }
                          if (ec) {
                            self->out_.flush();
                            self->done_ = true;
                            return;
                          }
                          self->read();
                        });
  }
  boost::asio::posix::stream_descriptor sd_;
  std::ofstream out_;
  std::array<char, 65536> buf_{};
  std::size_t bytes_ = 0;
  bool done_ = false;
};

// The members of every group running now, over all threads: a child of this process
// that is not one of them is a stray (a reparented descendant of some trial). Forks
// happen under the lock, so a member is registered before anyone can see it.
std::mutex g_members_mu;
std::set<int> g_members;

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

struct Started {
  pid_t pid = 0;
  std::string error;
  int out = -1, err = -1;  // read ends, owned by the caller
};

// Forks one member, joins it to `leader`'s group (0: a new one), runs `on_started` for
// a new group while the child waits, then lets it exec. Throws what on_started throws.
Started spawn(const ProcessSpec& spec, pid_t leader, const std::function<void(int)>& on_started) {
  Started s;
  const pid_t self = ::getpid();
  std::vector<std::string> args{spec.exe};
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env;
  for (const auto& [k, v] : spec.env) {
    if (k != kSupervisorVariable) env.push_back(k + "=" + v);
  }
  // The leader writes its own pid (the group id) into the reserved digits.
  const std::string unset = supervisor_token(self, 0);  // "...:0": the leader replaces the 0
  env.push_back(leader ? supervisor_token(self, leader)
                       : unset.substr(0, unset.size() - 1) + std::string(16, '\0'));
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  Fd in, out_r, out_w, err_r, err_w, go_r, go_w, rep_r, rep_w;
  in.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in.fd < 0 || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) || !make_pipe(go_r, go_w) ||
      !make_pipe(rep_r, rep_w)) {
    s.error = std::string("cannot create pipes: ") + ::strerror(errno);
    return s;
  }
  ChildPlan plan;
  plan.exe = args.front().c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.leader = leader;
  plan.parent = self;
  plan.in = in.fd;
  plan.out = out_w.fd;
  plan.err = err_w.fd;
  plan.go = go_r.fd;
  plan.report = rep_w.fd;
  if (!leader) plan.pgid_digits = env.back().data() + unset.size() - 1;
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(g_members_mu);
    pid = ::fork();
    if (pid == 0) child_main(plan);
    if (pid > 0) g_members.insert(pid);
  }
  if (pid < 0) {
    s.error = std::string("fork failed: ") + ::strerror(errno);
    return s;
  }
  in.reset();
  out_w.reset();
  err_w.reset();
  go_r.reset();
  rep_w.reset();
  const pid_t pgid = leader ? leader : pid;
  ::setpgid(pid, pgid);  // also from the parent: the group exists when we return
  auto abandon = [&] {
    ::kill(-pgid, SIGKILL);
    ::kill(pid, SIGKILL);
    int st;
    ::waitpid(pid, &st, 0);
    std::lock_guard<std::mutex> lock(g_members_mu);
    g_members.erase(pid);
  };
  if (!leader && on_started) {
    try {
      on_started(static_cast<int>(pgid));
    } catch (...) {
      abandon();
      throw;
    }
  }
  const char go = 'g';
  if (::write(go_w.fd, &go, 1) != 1) {
    s.error = std::string("cannot start the child: ") + ::strerror(errno);
    abandon();
    return s;
  }
  go_w.reset();
  int child_errno = 0;
  ssize_t n;
  do n = ::read(rep_r.fd, &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    s.error = fmt::format("cannot execute '{}': {}", spec.exe, ::strerror(child_errno));
    abandon();
    return s;
  }
  s.pid = pid;
  s.out = out_r.fd;
  s.err = err_r.fd;
  out_r.fd = err_r.fd = -1;
  return s;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> inherited_env_without_switches() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (k.rfind("SG_", 0) == 0 || k == kSupervisorVariable) continue;
    out.emplace_back(k, kv.substr(eq + 1));
  }
  return out;
}

bool process_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

ProcessOutcome run_process(const ProcessSpec& spec) {
  return run_process_group({spec}).members.front();
}

GroupOutcome run_process_group(const std::vector<ProcessSpec>& specs) {
  using clock = std::chrono::steady_clock;
  install_interrupt_handlers();
  const ProcessSpec& control = specs.front();
  const std::size_t n = specs.size();
  GroupOutcome group;
  group.members.resize(n);
  boost::asio::io_context ioc;
  std::vector<std::shared_ptr<Drain>> drains;
  std::vector<int> status(n, 0);
  std::vector<bool> exited(n, false);
  std::set<int> roots;
  pid_t pgid = 0;
  auto t0 = clock::now();

  // The group's strays: its processes beyond the members, found by group, token and
  // parent chain; with no other group running, also every unregistered child of ours.
  auto strays = [&]() {
    std::set<int> found = find_processes(pgid, supervisor_token(::getpid(), pgid), false, roots);
    std::lock_guard<std::mutex> lock(g_members_mu);
    const bool alone =
        std::all_of(g_members.begin(), g_members.end(), [&](int p) { return roots.count(p) > 0; });
    if (alone) {
      for (const auto& p : list_processes()) {
        if (p.ppid == ::getpid() && !g_members.count(p.pid)) found.insert(p.pid);
      }
    }
    for (auto it = found.begin(); it != found.end();) {
      it = g_members.count(*it) && !roots.count(*it) ? found.erase(it) : std::next(it);
    }
    return found;
  };
  std::set<int> seen;  // every stray signalled: reaped here once it is our child
  auto signal_all = [&](int sig) {
    ::kill(-pgid, sig);
    for (int p : strays()) {
      if (!roots.count(p)) seen.insert(p);
      ::kill(p, sig);
    }
  };

  bool start_failed = false;
  for (std::size_t i = 0; i < n; ++i) {
    ProcessOutcome& out = group.members[i];
    Started s;
    try {
      s = spawn(specs[i], pgid, control.on_started);
    } catch (...) {
      if (pgid) signal_all(SIGKILL);  // earlier members (none when on_started threw)
      throw;
    }
    if (!s.error.empty()) {
      out.start_error = s.error;
      start_failed = true;
      exited[i] = true;
      if (group.failed_member < 0) group.failed_member = static_cast<int>(i);
      break;
    }
    out.started = true;
    out.pid = s.pid;
    roots.insert(s.pid);
    if (pgid == 0) pgid = s.pid;
    drains.push_back(std::make_shared<Drain>(ioc, s.out, specs[i].stdout_log));
    drains.push_back(std::make_shared<Drain>(ioc, s.err, specs[i].stderr_log));
    drains[drains.size() - 2]->start();
    drains.back()->start();
  }
  group.pgid = pgid;
  if (pgid == 0) return group;  // nothing started
  for (std::size_t i = 0; i < n; ++i) {
    if (!group.members[i].started) exited[i] = true;  // never ran: nothing to reap
  }

  bool term_sent = false, kill_sent = false;
  clock::time_point term_at{}, last_exit{}, last_tick = t0;
  if (start_failed) {
    term_sent = kill_sent = true;
    signal_all(SIGKILL);
  }
  auto all_exited = [&] {
    return std::all_of(exited.begin(), exited.end(), [](bool b) { return b; });
  };
  auto drains_done = [&] {
    return std::all_of(drains.begin(), drains.end(), [](const auto& d) { return d->done(); });
  };
  while (true) {
    ioc.run_for(std::chrono::milliseconds(50));
    auto now = clock::now();
    int failed_now = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (exited[i]) continue;
      int st = 0;
      pid_t r = ::waitpid(group.members[i].pid, &st, WNOHANG);
      if (r != group.members[i].pid) continue;
      exited[i] = true;
      status[i] = st;
      last_exit = now;
      const bool failed = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
      if (failed && !term_sent &&
          (failed_now < 0 || (WIFSIGNALED(st) && !WIFSIGNALED(status[failed_now])))) {
        failed_now = static_cast<int>(i);
      }
    }
    if (failed_now >= 0 && !all_exited()) {
      // A member died while its peers run: they would wait for it forever.
      group.failed_member = failed_now;
      term_sent = true;
      term_at = now;
      signal_all(SIGTERM);
    } else if (failed_now >= 0 && group.failed_member < 0 && n > 1) {
      group.failed_member = failed_now;
    }
    if (!all_exited() && !term_sent && interrupt_signal() != 0) {
      group.interrupted = true;
      term_sent = true;
      term_at = now;
      signal_all(SIGTERM);
    }
    if (!all_exited() && control.deadline.count() > 0 && now - t0 > control.deadline &&
        !term_sent) {
      group.deadline_hit = true;
      term_sent = true;
      term_at = now;
      signal_all(SIGTERM);
    }
    if (!all_exited() && term_sent && !kill_sent && now - term_at > control.grace) {
      kill_sent = true;
      signal_all(SIGKILL);
    }
    if (all_exited() && drains_done()) break;
    if (all_exited() && now - last_exit > control.drain_after_exit) {
      // A descendant still holds the pipes: it belongs to the trial.
      signal_all(SIGKILL);
      for (auto& d : drains) d->close();
      ioc.run_for(std::chrono::milliseconds(100));
      break;
    }
    if (control.on_tick && now - last_tick > std::chrono::seconds(1)) {
      last_tick = now;
      control.on_tick();
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_members_mu);
    for (int p : roots) g_members.erase(p);
  }
  // Nothing of the trial may outlive it: kill what is left and reap the strays that
  // were reparented to us (bounded: a process stuck in the kernel is left behind).
  for (int round = 0; round < 40; ++round) {
    signal_all(SIGKILL);
    for (auto it = seen.begin(); it != seen.end();) {
      int st;
      const pid_t r = ::waitpid(*it, &st, WNOHANG);
      std::error_code ec;
      const bool gone =
          r == *it || (r < 0 && !std::filesystem::exists(fmt::format("/proc/{}", *it), ec));
      it = gone ? seen.erase(it) : std::next(it);
    }
    if (seen.empty() && strays().empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  const double wall_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::size_t d = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ProcessOutcome& out = group.members[i];
    if (!out.started) continue;
    out.wall_s = wall_s;
    out.deadline_hit = group.deadline_hit;
    out.interrupted = group.interrupted;
    out.stdout_bytes = drains[d++]->bytes();
    out.stderr_bytes = drains[d++]->bytes();
    if (WIFSIGNALED(status[i])) {
      out.signaled = true;
      out.signal = WTERMSIG(status[i]);
    } else if (WIFEXITED(status[i])) {
      out.exit_code = WEXITSTATUS(status[i]);
    }
  }
  return group;
}

}  // namespace sg::agent
