// One subcommand: it declares its options on a CLI11 subcommand (so --help comes
// from the same definitions) and runs after parsing. run() returns the exit code
// or throws UsageError / GateFailure / StoreError, mapped in app.cpp.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace sg::agent {

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* app() const = 0;
  virtual int run() = 0;
};

std::unique_ptr<Command> make_tune_command(CLI::App& parent);
std::unique_ptr<Command> make_presets_emit_command(CLI::App& presets);
std::unique_ptr<Command> make_presets_check_command(CLI::App& presets);
std::unique_ptr<Command> make_presets_project_command(CLI::App& presets);
std::unique_ptr<Command> make_report_command(CLI::App& parent);
std::unique_ptr<Command> make_serve_command(CLI::App& parent);
std::unique_ptr<Command> make_nightly_command(CLI::App& parent);

// speedgate-train next to this executable (found via /proc/self/exe).
std::string default_trainer_path();
constexpr const char* kDefaultDb = "results/speedgate.db";

}  // namespace sg::agent
