// `speedgate nightly`: a time-budgeted campaign that re-verifies the presets, catches
// regressions and explores (agent/nightly/nightly.hpp). Exit 0 when every preset was
// re-verified and kept, 1 on a demotion or a night that could not verify them (so
// schedulers alert), 2 on usage errors.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "agent/cli/campaign_options.hpp"
#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/nightly/nightly.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class NightlyCommand : public Command {
 public:
  explicit NightlyCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "nightly",
            "re-verify the presets against a fresh baseline, demote regressions (exit 1), "
            "explore for the rest of the budget")) {
    add_campaign_options(app_, o_.campaign, budgets_);
    // Default: the workload and size (and trainer) of the database's latest campaign.
    app_->get_option("--workload")
        ->required(false)
        ->description(
            "workload from the trainer manifest (default: the database's latest campaign's)");
    app_->get_option("--size")->required(false)->description(
        "size from the trainer manifest (default: the database's latest campaign's)");
    app_->add_option("--budget-minutes", o_.campaign.budget.minutes,
                     "wall-clock budget; the trainer run in flight finishes, nothing new starts")
        ->required()
        ->check(positive_number());
    app_->add_option("--presets-dir", o_.presets_dir,
                     "current presets (*.env) and where new ones and README.md go")
        ->capture_default_str();
    app_->add_option("--regression-limit", o_.regression_limit,
                     "a preset must keep this fraction of its recorded speedup")
        ->check(CLI::Range(0.01, 1.0))
        ->capture_default_str();
    app_->add_flag("--json", json_, "print the night's report as JSON on stdout");
  }
  int run() override {
    default_from_latest_campaign();
    apply_campaign_options(o_.campaign, budgets_);
    check_output_dir("--presets-dir", o_.presets_dir);
    o_.campaign.progress = ::isatty(2) != 0;
    Manifest manifest = describe_trainer(o_.campaign.trainer);
    nightly::NightlyReport r = nightly::run_nightly(o_, manifest);
    set_progress_status("");  // the summary below stands alone on the terminal
    if (json_) {
      std::cout << r.to_json().dump(2) << "\n";
    } else {
      std::cout << fmt::format("nightly campaign {}{}: {} trainer runs, {} reused{}\n",
                               r.campaign_id, r.resumed ? " (resumed)" : "", r.trials_run,
                               r.trials_reused, r.budget_spent ? ", budget spent" : "");
      if (r.environment_changed) {
        std::cout << "environment CHANGED since campaign " << r.previous_campaign_id.value_or(0)
                  << ": " << r.environment_diff.dump() << "\n";
      }
      for (const auto& c : r.checks) {
        std::cout << fmt::format("preset {}: {} ({})\n", c.name,
                                 c.verdict == "demoted" ? "DEMOTED" : c.verdict, c.reason);
      }
      for (const auto& w : r.written) {
        std::cout << fmt::format("wrote {} ({} {:.3f}x)\n", w.path,
                                 w.config_key.empty() ? "defaults" : w.config_key, w.speedup);
      }
      if (!r.failure.empty()) std::cout << "FAILED: " << r.failure << "\n";
    }
    return r.exit_code();
  }

 private:
  void default_from_latest_campaign() {
    CampaignOptions& c = o_.campaign;
    if (!c.workload.empty() && !c.size.empty()) return;
    std::optional<CampaignRow> latest;
    if (std::filesystem::exists(c.db_path))
      latest = Store(c.db_path, /*read_only=*/true).latest_campaign(false);
    if (!latest) {
      throw UsageError("--workload and --size are required: " + c.db_path +
                       " has no campaign to take them from (run `speedgate tune` first)");
    }
    if (c.workload.empty()) c.workload = latest->workload;
    if (c.size.empty()) c.size = latest->size;
    if (c.trainer.empty() && std::filesystem::exists(latest->trainer)) c.trainer = latest->trainer;
    spdlog::info("nightly: {} {} with {} (campaign {}'s; --workload/--size/--trainer override)",
                 c.workload, c.size, c.trainer.empty() ? default_trainer_path() : c.trainer,
                 latest->id);
  }

  nightly::NightlyOptions o_;
  std::vector<std::string> budgets_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_nightly_command(CLI::App& parent) {
  return std::make_unique<NightlyCommand>(parent);
}

}  // namespace sg::agent
