#include "agent/runner/process.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

ProcessOutcome run_process(const ProcessSpec& spec) {
  using clock = std::chrono::steady_clock;
  ProcessOutcome out;
  boost::asio::io_context ioc;
  bp::async_pipe out_pipe(ioc), err_pipe(ioc);
  bp::environment env;
  env.clear();
  for (const auto& [k, v] : spec.env) env[k] = v;

  std::error_code ec;
  bp::child child;
  auto t0 = clock::now();
  try {
    child = bp::child(bp::exe = spec.exe, bp::args = spec.args, env, bp::std_in < bp::null,
                      bp::std_out > out_pipe, bp::std_err > err_pipe, ec,
                      bp::extend::on_exec_setup = [](auto&) { ::setpgid(0, 0); });
  } catch (const std::exception& e) {
    out.start_error = e.what();
    return out;
  }
  if (ec || !child.valid()) {
    out.start_error = ec ? ec.message() : "could not start";
    return out;
  }
  out.started = true;
  out.pid = child.id();
  ::setpgid(out.pid, out.pid);  // also from the parent: no race with our kill(-pgid)
  const pid_t pgid = out.pid;

  auto d_out = std::make_shared<Drain>(out_pipe, spec.stdout_log);
  auto d_err = std::make_shared<Drain>(err_pipe, spec.stderr_log);
  d_out->start();
  d_err->start();

  bool term_sent = false, kill_sent = false, exited = false;
  clock::time_point term_at{}, exit_at{}, last_tick = t0;
  int status = 0;
  while (true) {
    ioc.run_for(std::chrono::milliseconds(50));
    auto now = clock::now();
    if (!exited) {
      int st = 0;
      pid_t r = ::waitpid(out.pid, &st, WNOHANG);
      if (r == out.pid) {
        exited = true;
        status = st;
        exit_at = now;
      }
    }
    if (!exited && spec.deadline.count() > 0 && now - t0 > spec.deadline && !term_sent) {
      out.deadline_hit = true;
      term_sent = true;
      term_at = now;
      ::kill(-pgid, SIGTERM);
    }
    if (!exited && term_sent && !kill_sent && now - term_at > spec.grace) {
      kill_sent = true;
      ::kill(-pgid, SIGKILL);
    }
    if (exited && d_out->done() && d_err->done()) break;
    if (exited && now - exit_at > spec.drain_after_exit) {
      // A grandchild still holds the pipes: it belongs to the trial's group.
      ::kill(-pgid, SIGKILL);
      boost::system::error_code ignore;
      out_pipe.close(ignore);
      err_pipe.close(ignore);
      ioc.run_for(std::chrono::milliseconds(100));
      break;
    }
    if (spec.on_tick && now - last_tick > std::chrono::seconds(1)) {
      last_tick = now;
      spec.on_tick();
    }
  }
  // Nothing of the trial's group may outlive it.
  ::kill(-pgid, SIGKILL);
  child.detach();  // already reaped by our waitpid
  out.wall_s = std::chrono::duration<double>(clock::now() - t0).count();
  out.stdout_bytes = d_out->bytes();
  out.stderr_bytes = d_err->bytes();
  if (WIFSIGNALED(status)) {
    out.signaled = true;
    out.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  }
  return out;
}

}  // namespace sg::agent
