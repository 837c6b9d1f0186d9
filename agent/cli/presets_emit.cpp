// `speedgate presets emit`: write <budget>.env files and README.md from a campaign.
#include <filesystem>
#include <iostream>
#include <optional>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/presets/emit.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class PresetsEmitCommand : public Command {
 public:
  explicit PresetsEmitCommand(CLI::App& presets) {
    app_ = presets.add_subcommand("emit",
                                  "write one preset per memory budget plus README.md (atomically)");
    app_->add_option("--db", db_, "SQLite database")->capture_default_str();
    app_->add_option("--out", out_, "output directory (the committed presets/ only when named)")
        ->capture_default_str();
    app_->add_option("--campaign", campaign_, "campaign id (default: the latest)");
    app_->add_flag("--json", json_, "print what was written as JSON on stdout");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (!std::filesystem::exists(db_)) throw UsageError("database " + db_ + " does not exist");
    Store store(db_, /*read_only=*/false);
    std::optional<std::int64_t> cid;
    if (campaign_ > 0) cid = campaign_;
    EmitResult r = emit_presets(store, cid, out_);
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
  CLI::App* app_;
  std::string db_ = kDefaultDb, out_ = "results/presets";
  std::int64_t campaign_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_presets_emit_command(CLI::App& presets) {
  return std::make_unique<PresetsEmitCommand>(presets);
}

}  // namespace sg::agent
