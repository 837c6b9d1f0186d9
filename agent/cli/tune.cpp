// `speedgate tune`: run or resume a campaign.
#include <unistd.h>

#include <fmt/format.h>

#include "agent/campaign/campaign.hpp"
#include "agent/cli/campaign_options.hpp"
#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/common/progress_sink.hpp"
#include "agent/presets/emit.hpp"
#include "agent/report/summary.hpp"
#include "agent/runner/describe.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class TuneCommand : public Command {
 public:
  explicit TuneCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "tune", "run (or resume) a gated tuning campaign against a trainer")) {
    add_campaign_options(app_, o_, budgets_);  // shared with nightly: one declaration, one --help
    auto* bt = app_->add_option("--budget-trials", o_.budget.trials, "stop after N trainer runs")
                   ->check(positive_number());
    auto* bm = app_->add_option("--budget-minutes", o_.budget.minutes, "stop after M minutes")
                   ->check(positive_number());
    bt->excludes(bm);
    app_->add_flag("--resume", o_.require_resume,
                   "continue the latest campaign with the same options, also a finished one "
                   "(budget slices); error if none");
    app_->add_option("--presets-out", presets_out_,
                     "after the campaign, emit presets into this directory");
    app_->add_flag("--json", json_, "print the campaign summary as JSON on stdout");
  }
  int run() override {
    apply_campaign_options(o_, budgets_);
    if (!presets_out_.empty()) check_output_dir("--presets-out", presets_out_);
    o_.progress = ::isatty(2) != 0;
    Manifest manifest = describe_trainer(o_.trainer);
    std::int64_t cid = run_campaign(o_, manifest);
    set_progress_status("");  // the summary below stands alone on the terminal
    Store store(o_.db_path);
    bool presets_ok = true;
    if (!presets_out_.empty()) presets_ok = emit_presets(store, cid, presets_out_).all_budgets_met;
    print_summary(campaign_summary(store, cid), json_);
    return presets_ok ? 0 : 1;  // a budget nothing fits is a gate failure
  }

 private:
  CampaignOptions o_;
  std::vector<std::string> budgets_;
  std::string presets_out_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_tune_command(CLI::App& parent) {
  return std::make_unique<TuneCommand>(parent);
}

}  // namespace sg::agent
