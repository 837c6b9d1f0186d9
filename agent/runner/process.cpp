#include "agent/runner/process.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <memory>

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>

extern char** environ;

namespace sg::agent {
namespace bp = boost::process;
namespace {

// Reads one pipe to EOF asynchronously, appending to a log file.
class Drain : public std::enable_shared_from_this<Drain> {
 public:
  Drain(bp::async_pipe& pipe, const std::string& path)
      : pipe_(pipe), out_(path, std::ios::binary | std::ios::trunc) {}
  void start() { read(); }
  bool done() const { return done_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void read() {
    auto self = shared_from_this();
    pipe_.async_read_some(boost::asio::buffer(buf_), [self](const boost::system::error_code& ec, std::size_t n) {
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
  bp::async_pipe& pipe_;
  std::ofstream out_;
  std::array<char, 65536> buf_{};
  std::size_t bytes_ = 0;
  bool done_ = false;
};

}  // namespace

std::vector<std::pair<std::string, std::string>> inherited_env_without_switches() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (k.rfind("SG_", 0) == 0) continue;
    out.emplace_back(k, kv.substr(eq + 1));
  }
  return out;
}

bool process_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

ProcessOutcome run_process(const ProcessSpec& spec) { return run_process_group({spec}).members.front(); }

GroupOutcome run_process_group(const std::vector<ProcessSpec>& specs) {
  using clock = std::chrono::steady_clock;
  const ProcessSpec& control = specs.front();
  const std::size_t n = specs.size();
  GroupOutcome group;
  group.members.resize(n);
  boost::asio::io_context ioc;
  std::vector<std::unique_ptr<bp::async_pipe>> out_pipes, err_pipes;
  std::vector<std::shared_ptr<Drain>> drains;
  std::vector<bp::child> children(n);
  std::vector<int> status(n, 0);
  std::vector<bool> exited(n, false);
  pid_t pgid = 0;
  auto t0 = clock::now();

  bool start_failed = false;
  for (std::size_t i = 0; i < n; ++i) {
    const ProcessSpec& spec = specs[i];
    ProcessOutcome& out = group.members[i];
    out_pipes.push_back(std::make_unique<bp::async_pipe>(ioc));
    err_pipes.push_back(std::make_unique<bp::async_pipe>(ioc));
    bp::environment env;
    env.clear();
    // set(), not operator[]: Boost 1.74's environment::find compares past the end of
    // shorter entries (a heap-buffer-overflow that ASan reports); set() checks sizes first.
    for (const auto& [k, v] : spec.env) env.set(k, v);
    std::error_code ec;
    const pid_t leader = pgid;  // 0 for the first child: it leads a new group
    try {
      children[i] = bp::child(bp::exe = spec.exe, bp::args = spec.args, env, bp::std_in < bp::null,
                              bp::std_out > *out_pipes[i], bp::std_err > *err_pipes[i], ec,
                              bp::extend::on_exec_setup = [leader](auto&) { ::setpgid(0, leader); });
    } catch (const std::exception& e) {
      out.start_error = e.what();
    }
    if (out.start_error.empty() && (ec || !children[i].valid())) out.start_error = ec ? ec.message() : "could not start";
    if (!out.start_error.empty()) {
      start_failed = true;
      exited[i] = true;
      if (group.failed_member < 0) group.failed_member = static_cast<int>(i);
      break;
    }
    out.started = true;
    out.pid = children[i].id();
    if (pgid == 0) pgid = out.pid;
    ::setpgid(out.pid, pgid);  // also from the parent: no race with our kill(-pgid)
    drains.push_back(std::make_shared<Drain>(*out_pipes[i], spec.stdout_log));
    drains.push_back(std::make_shared<Drain>(*err_pipes[i], spec.stderr_log));
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
    ::kill(-pgid, SIGKILL);
  }
  auto all_exited = [&] { return std::all_of(exited.begin(), exited.end(), [](bool b) { return b; }); };
  auto drains_done = [&] { return std::all_of(drains.begin(), drains.end(), [](const auto& d) { return d->done(); }); };
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
      if (failed && !term_sent && (failed_now < 0 || (WIFSIGNALED(st) && !WIFSIGNALED(status[failed_now])))) {
        failed_now = static_cast<int>(i);
      }
    }
    if (failed_now >= 0 && !all_exited()) {
      // A member died while its peers run: they would wait for it forever.
      group.failed_member = failed_now;
      term_sent = true;
      term_at = now;
      ::kill(-pgid, SIGTERM);
    } else if (failed_now >= 0 && group.failed_member < 0 && n > 1) {
      group.failed_member = failed_now;
    }
    if (!all_exited() && control.deadline.count() > 0 && now - t0 > control.deadline && !term_sent) {
      group.deadline_hit = true;
      term_sent = true;
      term_at = now;
      ::kill(-pgid, SIGTERM);
    }
    if (!all_exited() && term_sent && !kill_sent && now - term_at > control.grace) {
      kill_sent = true;
      ::kill(-pgid, SIGKILL);
    }
    if (all_exited() && drains_done()) break;
    if (all_exited() && now - last_exit > control.drain_after_exit) {
      // A grandchild still holds the pipes: it belongs to the trial's group.
      ::kill(-pgid, SIGKILL);
      boost::system::error_code ignore;
      for (auto& p : out_pipes) p->close(ignore);
      for (auto& p : err_pipes) p->close(ignore);
      ioc.run_for(std::chrono::milliseconds(100));
      break;
    }
    if (control.on_tick && now - last_tick > std::chrono::seconds(1)) {
      last_tick = now;
      control.on_tick();
    }
  }
  // Nothing of the trial's group may outlive it.
  ::kill(-pgid, SIGKILL);
  const double wall_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::size_t d = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ProcessOutcome& out = group.members[i];
    if (!out.started) continue;
    children[i].detach();  // already reaped by our waitpid
    out.wall_s = wall_s;
    out.deadline_hit = group.deadline_hit;
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
