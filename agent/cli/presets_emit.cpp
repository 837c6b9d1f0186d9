// `speedgate presets emit`: write <budget>.env files and README.md from a campaign.
#include <iostream>

#include "agent/cli/command.hpp"
#include "agent/presets/emit.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class PresetsEmitCommand : public Command {
 public:
  explicit PresetsEmitCommand(CLI::App& presets)
      : Command(presets.add_subcommand(
            "emit", "write one preset per memory budget plus README.md (atomically)")) {
    add_db_option(app_, db_, "SQLite database");
    app_->add_option("--out", out_, "output directory (the committed presets/ only when named)")
        ->capture_default_str();
    add_campaign_id_option(app_, campaign_);
    app_->add_flag("--json", json_, "print what was written as JSON on stdout");
  }
  int run() override {
    require_database(db_);
    Store store(db_, /*read_only=*/false);
    EmitResult r = emit_presets(store, chosen_campaign(campaign_), out_);
    if (json_) {
      std::cout << r.summary.dump(2) << "\n";
    } else {
      for (const auto& p : r.summary["presets"]) {
        if (p.value("written", false))
          std::cout << "wrote " << p["path"].get<std::string>() << "\n";
        else
          std::cout << "no preset for " << p["name"].get<std::string>() << ": "
                    << p["reason"].get<std::string>() << "\n";
      }
    }
    return r.all_budgets_met ? 0 : 1;
  }

 private:
  std::string db_ = kDefaultDb, out_ = "results/presets";
  std::int64_t campaign_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_presets_emit_command(CLI::App& presets) {
  return std::make_unique<PresetsEmitCommand>(presets);
}

}  // namespace sg::agent
