// `speedgate report`: summarise a campaign (human text, or --json).
#include <filesystem>
#include <iostream>
#include <optional>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/report/summary.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class ReportCommand : public Command {
 public:
  explicit ReportCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("report", "summarise a campaign");
    app_->add_option("--db", db_, "SQLite database")->capture_default_str();
    app_->add_option("--campaign", campaign_, "campaign id (default: the latest)");
    app_->add_flag("--json", json_, "machine-readable JSON on stdout");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (!std::filesystem::exists(db_)) throw UsageError("database " + db_ + " does not exist");
    Store store(db_, /*read_only=*/true);
    std::optional<std::int64_t> cid;
    if (campaign_ > 0) cid = campaign_;
    auto s = campaign_summary(store, cid);
    if (json_)
      std::cout << s.dump(2) << "\n";
    else
      std::cout << format_summary(s);
    return 0;
  }

 private:
  CLI::App* app_;
  std::string db_ = kDefaultDb;
  std::int64_t campaign_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_report_command(CLI::App& parent) {
  return std::make_unique<ReportCommand>(parent);
}

}  // namespace sg::agent
