// `speedgate report`: summarise a campaign (human text, or --json).
#include "agent/cli/command.hpp"
#include "agent/report/summary.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class ReportCommand : public Command {
 public:
  explicit ReportCommand(CLI::App& parent)
      : Command(parent.add_subcommand("report", "summarise a campaign")) {
    add_db_option(app_, db_, "SQLite database");
    add_campaign_id_option(app_, campaign_);
    app_->add_flag("--json", json_, "machine-readable JSON on stdout");
  }

  int run() override {
    require_database(db_);
    Store store(db_, /*read_only=*/true);
    print_summary(campaign_summary(store, chosen_campaign(campaign_)), json_);
    return 0;
  }

 private:
  std::string db_ = kDefaultDb;
  std::int64_t campaign_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_report_command(CLI::App& parent) {
  return std::make_unique<ReportCommand>(parent);
}

}  // namespace sg::agent
