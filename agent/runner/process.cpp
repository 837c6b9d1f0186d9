#include "agent/runner/process.hpp"

#include <signal.h>
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
#include "agent/runner/spawn.hpp"

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

// One run of run_process_group: the members, the drains of their output, their exit
// statuses and the signals sent so far. The group-wide controls come from specs[0].
class GroupRun {
 public:
  explicit GroupRun(const std::vector<ProcessSpec>& specs)
      : specs_(specs),
        control_(specs.front()),
        n_(specs.size()),
        status_(n_, 0),
        exited_(n_, false) {
    group_.members.resize(n_);
  }

  GroupOutcome run() {
    const bool start_failed = start_members();
    group_.pgid = pgid_;
    if (pgid_ == 0) return group_;  // nothing started
    for (std::size_t i = 0; i < n_; ++i) {
      if (!group_.members[i].started) exited_[i] = true;  // never ran: nothing to reap
    }
    last_tick_ = t0_;
    if (start_failed) {
      term_sent_ = kill_sent_ = true;
      signal_all(SIGKILL);
    }
    supervise();
    {
      std::lock_guard<std::mutex> lock(g_members_mu);
      for (int p : roots_) g_members.erase(p);
    }
    kill_leftovers();
    record_outcomes();
    return group_;
  }

 private:
  using clock = std::chrono::steady_clock;

  // The group's strays: its processes beyond the members, found by group, token and
  // parent chain; with no other group running, also every unregistered child of ours.
  std::set<int> strays() {
    std::set<int> found = find_processes(pgid_, supervisor_token(::getpid(), pgid_), false, roots_);
    std::lock_guard<std::mutex> lock(g_members_mu);
    const bool alone =
        std::all_of(g_members.begin(), g_members.end(), [&](int p) { return roots_.count(p) > 0; });
    if (alone) {
      for (const auto& p : list_processes()) {
        if (p.ppid == ::getpid() && !g_members.count(p.pid)) found.insert(p.pid);
      }
    }
    for (auto it = found.begin(); it != found.end();) {
      it = g_members.count(*it) && !roots_.count(*it) ? found.erase(it) : std::next(it);
    }
    return found;
  }

  void signal_all(int sig) {
    ::kill(-pgid_, sig);
    for (int p : strays()) {
      if (!roots_.count(p)) seen_.insert(p);
      ::kill(p, sig);
    }
  }

  // Starts the members in order, the first leading the group; stops at the first that
  // cannot start (true then). Throws what on_started throws, with the group killed.
  bool start_members() {
    for (std::size_t i = 0; i < n_; ++i) {
      ProcessOutcome& out = group_.members[i];
      Started s;
      try {
        s = spawn(specs_[i], pgid_, control_.on_started);
      } catch (...) {
        if (pgid_) signal_all(SIGKILL);  // earlier members (none when on_started threw)
        throw;
      }
      if (!s.error.empty()) {
        out.start_error = s.error;
        exited_[i] = true;
        if (group_.failed_member < 0) group_.failed_member = static_cast<int>(i);
        return true;
      }
      out.started = true;
      out.pid = s.pid;
      roots_.insert(s.pid);
      if (pgid_ == 0) pgid_ = s.pid;
      drains_.push_back(std::make_shared<Drain>(ioc_, s.out, specs_[i].stdout_log));
      drains_.push_back(std::make_shared<Drain>(ioc_, s.err, specs_[i].stderr_log));
      drains_[drains_.size() - 2]->start();
      drains_.back()->start();
    }
    return false;
  }

  // Polls until every member has exited and its output is drained (or a descendant
  // holding the pipes has been killed), ending the group on failure, stop or deadline.
  void supervise() {
    while (true) {
      ioc_.run_for(std::chrono::milliseconds(50));
      auto now = clock::now();
      end_early(reap_members(now), now);
      if (all_exited() && drains_done()) break;
      if (all_exited() && now - last_exit_ > control_.drain_after_exit) {
        // A descendant still holds the pipes: it belongs to the trial.
        signal_all(SIGKILL);
        for (auto& d : drains_) d->close();
        ioc_.run_for(std::chrono::milliseconds(100));
        break;
      }
      if (control_.on_tick && now - last_tick_ > std::chrono::seconds(1)) {
        last_tick_ = now;
        control_.on_tick();
      }
    }
  }

  // Reaps the members that exited; returns the one whose failure should end the group
  // (-1 none): a signalled one wins over an exit code.
  int reap_members(clock::time_point now) {
    int failed_now = -1;
    for (std::size_t i = 0; i < n_; ++i) {
      if (exited_[i]) continue;
      int st = 0;
      pid_t r = ::waitpid(group_.members[i].pid, &st, WNOHANG);
      if (r != group_.members[i].pid) continue;
      exited_[i] = true;
      status_[i] = st;
      last_exit_ = now;
      const bool failed = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
      if (failed && !term_sent_ &&
          (failed_now < 0 || (WIFSIGNALED(st) && !WIFSIGNALED(status_[failed_now])))) {
        failed_now = static_cast<int>(i);
      }
    }
    return failed_now;
  }

  // SIGTERM to the group when a member failed, a stop signal came or the deadline
  // passed; SIGKILL once the grace after it is over.
  void end_early(int failed_now, clock::time_point now) {
    if (failed_now >= 0 && !all_exited()) {
      // A member died while its peers run: they would wait for it forever.
      group_.failed_member = failed_now;
      terminate(now);
    } else if (failed_now >= 0 && group_.failed_member < 0 && n_ > 1) {
      group_.failed_member = failed_now;
    }
    if (!all_exited() && !term_sent_ && interrupt_signal() != 0) {
      group_.interrupted = true;
      terminate(now);
    }
    if (!all_exited() && control_.deadline.count() > 0 && now - t0_ > control_.deadline &&
        !term_sent_) {
      group_.deadline_hit = true;
      terminate(now);
    }
    if (!all_exited() && term_sent_ && !kill_sent_ && now - term_at_ > control_.grace) {
      kill_sent_ = true;
      signal_all(SIGKILL);
    }
  }

  void terminate(clock::time_point now) {
    term_sent_ = true;
    term_at_ = now;
    signal_all(SIGTERM);
  }

  // Nothing of the trial may outlive it: kill what is left and reap the strays that
  // were reparented to us (bounded: a process stuck in the kernel is left behind).
  void kill_leftovers() {
    for (int round = 0; round < 40; ++round) {
      signal_all(SIGKILL);
      for (auto it = seen_.begin(); it != seen_.end();) {
        int st;
        const pid_t r = ::waitpid(*it, &st, WNOHANG);
        std::error_code ec;
        const bool gone =
            r == *it || (r < 0 && !std::filesystem::exists(fmt::format("/proc/{}", *it), ec));
        it = gone ? seen_.erase(it) : std::next(it);
      }
      if (seen_.empty() && strays().empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }

  void record_outcomes() {
    const double wall_s = std::chrono::duration<double>(clock::now() - t0_).count();
    std::size_t d = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      ProcessOutcome& out = group_.members[i];
      if (!out.started) continue;
      out.wall_s = wall_s;
      out.deadline_hit = group_.deadline_hit;
      out.interrupted = group_.interrupted;
      out.stdout_bytes = drains_[d++]->bytes();
      out.stderr_bytes = drains_[d++]->bytes();
      if (WIFSIGNALED(status_[i])) {
        out.signaled = true;
        out.signal = WTERMSIG(status_[i]);
      } else if (WIFEXITED(status_[i])) {
        out.exit_code = WEXITSTATUS(status_[i]);
      }
    }
  }

  bool all_exited() const {
    return std::all_of(exited_.begin(), exited_.end(), [](bool b) { return b; });
  }
  bool drains_done() const {
    return std::all_of(drains_.begin(), drains_.end(), [](const auto& d) { return d->done(); });
  }

  const std::vector<ProcessSpec>& specs_;
  const ProcessSpec& control_;
  const std::size_t n_;
  GroupOutcome group_;
  boost::asio::io_context ioc_;
  std::vector<std::shared_ptr<Drain>> drains_;
  std::vector<int> status_;
  std::vector<bool> exited_;
  std::set<int> roots_;
  std::set<int> seen_;  // every stray signalled: reaped here once it is our child
  pid_t pgid_ = 0;
  const clock::time_point t0_ = clock::now();
  bool term_sent_ = false, kill_sent_ = false;
  clock::time_point term_at_{}, last_exit_{}, last_tick_{};
};
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
  install_interrupt_handlers();
  return GroupRun(specs).run();
}

}  // namespace sg::agent
