// `speedgate tune`: run or resume a campaign.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "agent/cli/campaign_options.hpp"
#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/presets/emit.hpp"
#include "agent/report/summary.hpp"
#include "agent/runner/describe.hpp"
#include "agent/search/campaign.hpp"
#include "agent/search/strategy.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

class TuneCommand : public Command {
 public:
  explicit TuneCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("tune", "run (or resume) a gated tuning campaign against a trainer");
    app_->add_option("--workload", o_.workload, "workload from the trainer manifest (e.g. wam)")->required();
    app_->add_option("--size", o_.size, "size from the trainer manifest (e.g. tiny)")->required();
    app_->add_option("--db", o_.db_path, "SQLite database")->capture_default_str();
    auto* bt = app_->add_option("--budget-trials", o_.budget_trials, "stop after N trainer runs")->check(CLI::PositiveNumber);
    auto* bm = app_->add_option("--budget-minutes", o_.budget_minutes, "stop after M minutes")->check(CLI::PositiveNumber);
    bt->excludes(bm);
    app_->add_option("--memory-budget", budgets_,
                     "NAME=SIZE, repeatable; one preset per budget (IEC units: B KiB MiB GiB TiB)")
        ->default_str("fast=141GiB fast_80gb=80GiB");
    app_->add_option("--target-micro-batch", o_.target_micro_batch, "micro-batch per GPU to project memory for (default: the size's default)")
        ->check(CLI::PositiveNumber);
    app_->add_option("--target-world-size", o_.target_world_size, "GPUs to project memory for")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--zero-stage", o_.zero_stage, "ZeRO stage (0-3) for the projection")->check(CLI::Range(0, 3))->capture_default_str();
    app_->add_option("--micro-batch", o_.micro_batch, "measured micro-batch (default: the size's default; the memory probe runs 2x)")
        ->check(CLI::PositiveNumber);
    app_->add_option("--grad-accum", o_.grad_accum, "gradient accumulation steps")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--trainer", o_.trainer, "trainer executable (default: speedgate-train next to speedgate)");
    app_->add_flag("--resume", o_.require_resume, "continue the latest campaign with the same options, also a finished one (budget slices); error if none");
    app_->add_option("--steps", o_.steps, "full (confirmation) step budget")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--screen-steps", o_.screen_steps, "short step budget for screening (default max(3, steps/2))")->check(CLI::PositiveNumber);
    app_->add_option("--seeds", o_.seeds, "baseline band seeds; the first is s0")->delimiter(',')->capture_default_str();
    app_->add_option("--threads", o_.threads, "trainer intra-op threads (part of the fingerprint)")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--repeats", o_.repeats, "paired ABAB speed repeats")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--band-factor", o_.band_factor, "tolerance class: allowed multiple of the seed band")->check(CLI::PositiveNumber)->capture_default_str();
    app_->add_option("--trial-timeout", o_.trial_deadline_s, "seconds per trial before SIGTERM/SIGKILL")->check(CLI::PositiveNumber)->capture_default_str();
    std::string strategies;
    for (const auto& n : StrategyRegistry::instance().names()) strategies += " " + n;
    app_->add_option("--plan", o_.plan, "strategies to run in order; available:" + strategies)->delimiter(',');
    add_executor_options(app_, o_);
    app_->add_option("--presets-out", presets_out_, "after the campaign, emit presets into this directory");
    app_->add_flag("--json", json_, "print the campaign summary as JSON on stdout");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (budgets_.empty()) budgets_ = {"fast=141GiB", "fast_80gb=80GiB"};
    for (const auto& b : budgets_) {
      NamedBudget nb = parse_named_budget(b);
      for (const auto& have : o_.budgets) {
        if (have.name == nb.name) throw UsageError("--memory-budget " + nb.name + " given twice");
      }
      o_.budgets.push_back(nb);
    }
    if (o_.trainer.empty()) o_.trainer = default_trainer_path();
    o_.progress = ::isatty(2) != 0;
    int s = o_.screen_steps == 0 ? std::max(std::min(3, o_.steps), o_.steps / 2) : o_.screen_steps;
    if (s > o_.steps) throw UsageError("--screen-steps must not exceed --steps");
    Manifest manifest = describe_trainer(o_.trainer);
    std::int64_t cid = run_campaign(o_, manifest);
    Store store(o_.db_path);
    bool presets_ok = true;
    if (!presets_out_.empty()) presets_ok = emit_presets(store, cid, presets_out_).all_budgets_met;
    auto summary = campaign_summary(store, cid);
    if (json_) std::cout << summary.dump(2) << "\n";
    else std::cout << format_summary(summary);
    return presets_ok ? 0 : 1;  // a budget nothing fits is a gate failure
  }

 private:
  CLI::App* app_;
  CampaignOptions o_;
  std::vector<std::string> budgets_;
  std::string presets_out_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_tune_command(CLI::App& parent) { return std::make_unique<TuneCommand>(parent); }

}  // namespace sg::agent
