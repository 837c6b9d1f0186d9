// What `presets emit` knows about one campaign while it renders the preset files and the
// README (agent/presets/emit.cpp, presets_readme.cpp). Internal to agent/presets/.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/presets/preset_header.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/ranking/target_rank.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

// What a preset was measured on and with, for its header and README: "cpu" or the GPU.
struct Provenance {
  std::string device;              // device_kind() of the fingerprint ("cpu", "NVIDIA H200")
  std::string trainer;             // the executable the campaign ran
  bool reference_trainer = false;  // speedgate-train: it also takes --preset FILE
};

struct EmitCampaign {
  CampaignRow camp;
  Manifest manifest;  // the campaign's workload's switches only
  int full_steps = 0;
  std::vector<EvaluationRow> evals;
  std::string fp_hash, fp_text = "unknown";
  bool deterministic = false;
  bool rounding_band = false;  // the tolerance class was judged against a measured rounding band
  Provenance prov;
  std::string out_dir;
};

// One written preset and how its figure was chosen, for the README.
struct WrittenPreset {
  PresetRow row;
  TargetRank rank;
  std::string figure, basis;  // the headline speedup with its interval, and where it comes from
};

std::string use_line(const Provenance& p, const std::string& path);
// A switch's own effect: the evaluation of that switch alone (with, at most, a variant of
// its own kernel family): its single-switch screen, or its confirmation at the full step
// budget when there is one; null when it was only measured inside combinations.
const EvaluationRow* own_effect(const std::vector<EvaluationRow>& evals, const Manifest& m,
                                const std::string& name, int full_steps);
// The README: the presets with their headline figure, what each carries without a gain of
// its own, then every switch of the manifest with its doc, default, class and own gain.
std::string render_presets_readme(const EmitCampaign& c, const std::vector<WrittenPreset>& written,
                                  int target_micro_batch, bool ranked_at_target);

}  // namespace sg::agent
