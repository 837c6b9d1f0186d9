// What a nightly run writes for people: a new <budget>.env (same provenance comments
// as `presets emit`, so the next night can read its claim back) and presets/README.md
// with every preset's status tonight and a DEMOTED note for each demotion.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "agent/nightly/nightly.hpp"
#include "agent/protocol/manifest.hpp"
#include "agent/store/store.hpp"

namespace sg::agent::nightly {

struct NightContext {
  CampaignRow campaign;
  std::string fingerprint_hash;
  std::string device;  // device_kind() of tonight's fingerprint: "cpu", "NVIDIA H200"
  const Manifest* manifest = nullptr;
};

std::string render_nightly_preset(const NightContext& night, const std::string& name,
                                  double budget_bytes, const EvaluationRow& e);

std::string render_nightly_readme(const NightContext& night, const NightlyReport& report);

}  // namespace sg::agent::nightly
