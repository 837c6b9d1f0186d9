// `speedgate presets project`: re-project an emitted preset's (or any evaluated
// configuration's) peak GPU memory to another micro-batch, world size or ZeRO stage from
// the points the campaign measured, without running anything. Used to compare a
// multi-GPU run's measured per-rank peak with what the model predicts for that run
// (benchmarks/h200x8.sh) and to ask "does this preset fit N GPUs at micro-batch B?".
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agent/cli/campaign_options.hpp"
#include "agent/cli/command.hpp"
#include "agent/common/errors.hpp"
#include "agent/memory/projection.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

class PresetsProjectCommand : public Command {
 public:
  explicit PresetsProjectCommand(CLI::App& presets)
      : Command(presets.add_subcommand(
            "project",
            "peak GPU memory of a preset (or evaluated configuration) at another micro-batch, "
            "world size or ZeRO stage, from the campaign's measured points")) {
    add_db_option(app_, db_, "SQLite database");
    add_campaign_id_option(app_, campaign_);
    auto* preset = app_->add_option("--preset", preset_,
                                    "an emitted preset's name (its memory budget, e.g. fast)");
    auto* config = app_->add_option("--config", config_,
                                    "a configuration key as the report prints it ('' = baseline)");
    preset->excludes(config);
    app_->add_option("--micro-batch", micro_batch_,
                     "target micro-batch per GPU (default: the campaign's target)")
        ->check(positive_number());
    app_->add_option("--world-size", world_size_, "GPUs (default: the campaign's target)")
        ->check(positive_number());
    app_->add_option("--zero-stage", zero_stage_, "ZeRO stage 0-3 (default: the campaign's)")
        ->check(CLI::Range(0, 3));
    app_->add_flag("--json", json_, "print the projection and its terms as JSON");
  }
  int run() override {
    require_database(db_);
    if (preset_.empty() && app_->count("--config") == 0)
      throw UsageError("presets project: give --preset NAME or --config KEY");
    if (app_->count("--campaign") > 0 && campaign_ < 1) {
      throw UsageError("presets project: --campaign must be a campaign id >= 1, not " +
                       std::to_string(campaign_));
    }
    Store store(db_, /*read_only=*/true);
    auto c = campaign_ > 0 ? store.campaign(campaign_) : store.latest_campaign(false);
    if (!c)
      throw UsageError("presets project: no campaign " +
                       (campaign_ > 0 ? std::to_string(campaign_) : "in " + db_));
    std::string key = config_;
    if (!preset_.empty()) {
      auto p = store.latest_preset(c->id, preset_);
      if (!p)
        throw UsageError("presets project: campaign " + std::to_string(c->id) +
                         " has no emitted preset '" + preset_ + "'");
      key = p->config_key;
    }
    auto rows = store.projections(c->id, key);
    if (rows.empty()) {
      throw UsageError("presets project: campaign " + std::to_string(c->id) +
                       " has no memory projection for configuration '" + key + "'");
    }
    ProjectionInputs in;
    try {
      in = projection_inputs_from_json(rows.front().inputs);
      if (micro_batch_ > 0) in.target_micro_batch = micro_batch_;
      if (world_size_ > 0) in.world_size = world_size_;
      if (zero_stage_ >= 0) in.zero_stage = zero_stage_;
      Projection p = project_peak(in);
      print(c->id, key, in, p);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("presets project: campaign ") + std::to_string(c->id) + ": " +
                       e.what());
    }
    return 0;
  }

 private:
  void print(std::int64_t campaign, const std::string& key, const ProjectionInputs& in,
             const Projection& p) const {
    if (json_) {
      nlohmann::json j = p.to_json(in);
      j["campaign_id"] = campaign;
      j["config_key"] = key;
      if (!preset_.empty()) j["preset"] = preset_;
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::string measured;
    for (const auto& pt : in.points)
      measured += (measured.empty() ? "" : ", ") + std::to_string(pt.micro_batch);
    std::printf("%s (campaign %lld): measured at micro-batch %s\n",
                preset_.empty() ? ("'" + key + "'").c_str() : preset_.c_str(),
                static_cast<long long>(campaign), measured.c_str());
    std::printf("projected peak per GPU at micro-batch %d, world size %d, ZeRO %d: %.2f GiB\n",
                in.target_micro_batch, in.world_size, in.zero_stage, p.peak_bytes / kGiB);
    std::printf(
        "  parameters %.2f, gradients %.2f, optimizer %.2f, frozen %.2f, comm %.2f, other fixed "
        "%.2f, "
        "activations %.2f, fragmentation %.2f GiB\n",
        p.params / kGiB, p.grads / kGiB, p.optimizer / kGiB, p.frozen / kGiB, p.comm / kGiB,
        p.other_fixed / kGiB, p.activations / kGiB, p.fragmentation / kGiB);
    std::printf("  extrapolated: %s\n",
                p.phase.empty() ? "the step's overall peak (no per-phase peaks stored)"
                                : ("the " + p.phase + " phase, the largest at the target").c_str());
  }

  std::string db_ = kDefaultDb, preset_, config_;
  std::int64_t campaign_ = 0;
  int micro_batch_ = 0, world_size_ = 0, zero_stage_ = -1;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_presets_project_command(CLI::App& presets) {
  return std::make_unique<PresetsProjectCommand>(presets);
}

}  // namespace sg::agent
