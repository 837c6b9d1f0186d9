// `speedgate presets check FILE`: validate a preset's syntax, switch names and values
// against a trainer manifest: by default the one the database's latest campaign
// stored (the trainer that campaign ran), else `--trainer`'s, else speedgate-train's;
// the output names which. Switches this host's trainer cannot run are a warning
// (exit 0) unless --strict asks "can I run it here" (exit 2). A preset measured on
// another device kind is not judged for this host (skipped, said so).
// Exit 0 valid, 2 invalid.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/files.hpp"
#include "agent/presets/preset_device.hpp"
#include "agent/presets/preset_file.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"
#include "common/suggest/suggest.hpp"

namespace sg::agent {
namespace {

// The manifest with every switch and kernel family marked available: what a preset
// may name anywhere, whatever this host can run.
Manifest everything_available(Manifest m) {
  for (auto& s : m.switches) s.available = true;
  for (auto& f : m.kernel_families) f.available = true;
  return m;
}

// "unknown switch SG_FOO (...)" gains the closest switch names.
std::string with_suggestion(const std::string& error, const Manifest& m) {
  const std::string tag = "unknown switch ";
  const auto at = error.find(tag);
  if (at == std::string::npos) return error;
  const std::string name =
      error.substr(at + tag.size(), error.find(' ', at + tag.size()) - at - tag.size());
  std::vector<std::string> envs;
  for (const auto& s : m.switches) envs.push_back(s.env);
  for (const auto& f : m.kernel_families) envs.push_back(f.env);
  return error + did_you_mean(name, envs);
}

class PresetsCheckCommand : public Command {
 public:
  explicit PresetsCheckCommand(CLI::App& presets)
      : Command(
            presets.add_subcommand("check", "validate a preset file against a trainer manifest")) {
    app_->add_option("file", file_, "preset file (.env)")->required();
    add_db_option(app_, db_, "take the manifest from this database's latest campaign");
    app_->add_option("--trainer", trainer_,
                     "take the manifest from `TRAINER describe --json` instead");
    app_->add_flag(
        "--strict", strict_,
        "also fail (exit 2) when this host's trainer cannot run a switch the preset sets");
    app_->add_flag("--json", json_, "print the verdict as JSON on stdout");
  }
  int run() override {
    std::unique_ptr<Store> store;
    Manifest m = load_manifest(store);
    std::string body;
    if (std::string why = preset::read_file(file_, &body); !why.empty()) throw UsageError(why);
    const std::optional<std::string> text = body;
    PresetParse p = parse_preset(*text, everything_available(m));
    for (auto& e : p.errors) e = with_suggestion(e, m);

    const auto preset_kind = preset_device_kind(*text);
    const std::string host_kind = host_device_kind(store.get(), m);
    const bool foreign = preset_kind && !same_device_kind(*preset_kind, host_kind);
    std::vector<std::string> warnings;
    if (p.ok()) {
      if (foreign)
        warnings.push_back(skipped_reason(*preset_kind, host_kind) +
                           " (its speed and memory claims are that device's)");
      if (!foreign || strict_) {
        PresetParse here = parse_preset(*text, m);
        for (const auto& e : here.errors)
          (strict_ ? p.errors : warnings).push_back("cannot run on this host: " + e);
      }
    }
    if (json_) {
      nlohmann::json j = {{"file", file_},
                          {"valid", p.ok()},
                          {"errors", p.errors},
                          {"warnings", warnings},
                          {"config", p.config},
                          {"manifest_from", source_},
                          {"host_device", host_kind},
                          {"preset_device", preset_kind.value_or("")},
                          {"strict", strict_}};
      std::cout << j.dump(2) << "\n";
    } else if (p.ok()) {
      std::cout << fmt::format(
          "{}: valid ({} switches) against the manifest of {}{}\n", file_, p.config.size(), source_,
          warnings.empty() ? "" : fmt::format("; {} warning(s)", warnings.size()));
    }
    for (const auto& w : warnings) spdlog::warn("{}: {}", file_, w);
    for (const auto& e : p.errors) spdlog::error("{}: {}", file_, e);
    if (!p.ok()) spdlog::error("{}: checked against the manifest of {}", file_, source_);
    return p.ok() ? 0 : 2;
  }

 private:
  Manifest load_manifest(std::unique_ptr<Store>& store) {
    if (std::filesystem::exists(db_)) store = std::make_unique<Store>(db_, /*read_only=*/true);
    if (!trainer_.empty()) {
      source_ = trainer_ + " (--trainer)";
      return describe_trainer(trainer_);
    }
    if (store) {
      if (auto c = store->latest_campaign(false)) {
        source_ = fmt::format("{} (campaign {} in {})", c->trainer, c->id, db_);
        return parse_manifest(c->manifest);
      }
    }
    std::string t = default_trainer_path();
    if (std::filesystem::exists(t)) {
      source_ = t + " (no campaign in " + db_ + ")";
      return describe_trainer(t);
    }
    throw UsageError("no manifest: " + db_ +
                     " has no campaign and no trainer was given (--trainer PATH)");
  }

  std::string file_, db_ = kDefaultDb, trainer_, source_;
  bool json_ = false, strict_ = false;
};

}  // namespace

std::unique_ptr<Command> make_presets_check_command(CLI::App& presets) {
  return std::make_unique<PresetsCheckCommand>(presets);
}

}  // namespace sg::agent
