#include "agent/cli/app.hpp"

#include <filesystem>
#include <iostream>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/interrupt.hpp"
#include "agent/common/progress_sink.hpp"
#include "common/suggest/cli_suggest.hpp"
#include "speedgate_build_info.hpp"

namespace sg::agent {

std::string default_trainer_path() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "speedgate-train";
  return (self.parent_path() / "speedgate-train").string();
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "speedgate: finds training speedups that provably do not change training.\n"
      "Exit codes: 0 ok, 1 gate or regression failure, 2 usage or bad input."};
  app.set_version_flag("--version",
                       fmt::format("speedgate {} ({})", SPEEDGATE_VERSION, SPEEDGATE_GIT_SHA));
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "stderr log level: trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_tune_command(app));
  CLI::App* presets = app.add_subcommand("presets", "emit, check or project preset files");
  presets->require_subcommand(1);
  commands.push_back(make_presets_emit_command(*presets));
  commands.push_back(make_presets_check_command(*presets));
  commands.push_back(make_presets_project_command(*presets));
  commands.push_back(make_report_command(app));
  commands.push_back(make_serve_command(app));
  commands.push_back(make_nightly_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "speedgate: " << explain_cli_error(app, argc, argv, e.what()) << "\n";
    return 2;
  }

  install_progress_logger("speedgate");  // log lines and the progress line share stderr
  spdlog::set_pattern("%H:%M:%S %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  try {
    for (auto& c : commands) {
      if (c->app()->parsed()) return c->run();
    }
    return 2;
  } catch (const Interrupted& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const UsageError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const StoreError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const GateFailure& e) {
    spdlog::error("gate: {}", e.what());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return 2;
  }
}

}  // namespace sg::agent
