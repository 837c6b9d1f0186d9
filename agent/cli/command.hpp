// One subcommand: it declares its options on a CLI11 subcommand (so --help comes
// from the same definitions) and runs after parsing. run() returns the exit code
// or throws UsageError / GateFailure / StoreError, mapped in app.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace sg::agent {

class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}
  virtual ~Command() = default;
  CLI::App* app() const { return app_; }
  virtual int run() = 0;

 protected:
  CLI::App* const app_;  // the subcommand, owned by its parent CLI::App
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

// --db PATH (its default shown in --help) and --campaign ID (0, the default: the latest),
// as the commands that read a stored campaign declare them.
void add_db_option(CLI::App* app, std::string& db, const std::string& description);
void add_campaign_id_option(CLI::App* app, std::int64_t& campaign);
// Throws UsageError unless the database file `db` exists (never creates one).
void require_database(const std::string& db);
// --campaign's value as the store's queries take it: nullopt (the latest) for 0.
std::optional<std::int64_t> chosen_campaign(std::int64_t campaign);

// A campaign summary on stdout: indented JSON, or format_summary's text.
void print_summary(const nlohmann::json& summary, bool as_json);

}  // namespace sg::agent
