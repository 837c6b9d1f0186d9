// The provenance comments a preset file starts with. `presets emit` and `nightly` write
// the same lines (the next night reads a preset's claim back from them); what differs
// between the two is passed in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "agent/protocol/manifest.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

struct PresetHeader {
  std::string name;  // the memory budget's name
  double budget_bytes = 0;
  std::string generator;  // "speedgate" or "speedgate nightly,"; the version follows it
  std::string device;     // "cpu", the GPU ("NVIDIA H200") or "an unrecorded device"
  std::string use;        // how to train with the file
  std::string fingerprint;
  std::string speedup;           // the text of the "speedup:" line
  std::string campaign_speedup;  // the text of the "campaign speedup:" line
  int target_micro_batch = 0;
  bool deterministic = false;
};

// The comment lines (without '#') for evaluation `e` of campaign `camp`, whose trainer
// is described by `m`.
std::vector<std::string> preset_header_comments(const PresetHeader& h, const CampaignRow& camp,
                                                const Manifest& m, const EvaluationRow& e);

// "1,2,3".
std::string join_ids(const std::vector<std::int64_t>& ids);
// `s` safe inside a markdown table cell: '|' and newlines become spaces.
std::string table_cell(std::string s);

}  // namespace sg::agent
