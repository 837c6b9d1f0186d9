// `speedgate serve --db PATH [--listen HOST:PORT] [--port N] [--allow-host NAME]...`: the
// dashboard, its JSON API and /metrics on one port (agent/dashboard/), until SIGINT or
// SIGTERM. The first stdout line is the URL, with port 0 resolved to the port bound.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/cli/command.hpp"
#include "agent/dashboard/server.hpp"

namespace sg::agent {
namespace {

class ServeCommand : public Command {
 public:
  explicit ServeCommand(CLI::App& parent)
      : Command(parent.add_subcommand("serve", "serve the dashboard, /api/v1 JSON and /metrics")) {
    add_db_option(app_, db_, "SQLite database (opened read-only)");
    app_->add_option("--listen", listen_, "HOST:PORT to bind; port 0 picks a free one")
        ->capture_default_str();
    app_->add_option("--port", port_, "port to bind (overrides --listen's); 0 picks a free one")
        ->check(CLI::Range(0, 65535));
    app_->add_option("--allow-host", allow_hosts_,
                     "a further name the Host header may carry (e.g. this machine's DNS name when "
                     "listening on 0.0.0.0); repeatable");
  }
  int run() override {
    auto address = dashboard::parse_listen(listen_);
    if (port_) address.port = *port_;
    // Block the signals before the server's threads start so they inherit the mask and
    // only sigwait below receives them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    dashboard::Server server(db_, address, allow_hosts_);
    std::printf("http://%s:%d/\n", address.host.c_str(), server.port());
    std::fflush(stdout);
    spdlog::info("serving {} read-only on http://{}:{}/ (metrics at /metrics)", db_, address.host,
                 server.port());
    int received = 0;
    sigwait(&signals, &received);
    spdlog::info("signal {}: stopping", received);
    return 0;
  }

 private:
  std::string db_ = kDefaultDb;
  std::string listen_ = "127.0.0.1:8321";
  std::optional<int> port_;
  std::vector<std::string> allow_hosts_;
};

}  // namespace

std::unique_ptr<Command> make_serve_command(CLI::App& parent) {
  return std::make_unique<ServeCommand>(parent);
}

}  // namespace sg::agent
