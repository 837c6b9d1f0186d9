// `speedgate presets check FILE`: validate a preset against the manifest (from the
// DB's latest campaign, or from --trainer describe). Exit 0 valid, 2 invalid.
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class PresetsCheckCommand : public Command {
 public:
  explicit PresetsCheckCommand(CLI::App& presets) {
    app_ = presets.add_subcommand("check", "validate a preset file against the trainer manifest");
    app_->add_option("file", file_, "preset file (.env)")->required();
    app_->add_option("--db", db_, "take the manifest from this database's latest campaign")->capture_default_str();
    app_->add_option("--trainer", trainer_, "take the manifest from `TRAINER describe --json` instead");
    app_->add_flag("--json", json_, "print the verdict as JSON on stdout");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    Manifest m = load_manifest();
    PresetParse p = parse_preset_file(file_, m);
    if (json_) {
      nlohmann::json j = {{"file", file_}, {"valid", p.ok()}, {"errors", p.errors}, {"config", p.config}};
      std::cout << j.dump(2) << "\n";
    } else if (p.ok()) {
      std::cout << file_ << ": valid (" << p.config.size() << " switches)\n";
    }
    for (const auto& e : p.errors) spdlog::error("{}: {}", file_, e);
    return p.ok() ? 0 : 2;
  }

 private:
  Manifest load_manifest() {
    if (!trainer_.empty()) return describe_trainer(trainer_);
    if (std::filesystem::exists(db_)) {
      Store store(db_, /*read_only=*/true);
      auto c = store.latest_campaign(false);
      if (c) return parse_manifest(c->manifest);
    }
    std::string t = default_trainer_path();
    if (std::filesystem::exists(t)) return describe_trainer(t);
    throw UsageError("no manifest: " + db_ + " has no campaign and no trainer was given (--trainer PATH)");
  }

  CLI::App* app_;
  std::string file_, db_ = kDefaultDb, trainer_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_presets_check_command(CLI::App& presets) {
  return std::make_unique<PresetsCheckCommand>(presets);
}

}  // namespace sg::agent
