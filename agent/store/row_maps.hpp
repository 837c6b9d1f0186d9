// The row maps that more than one store file reads with (row_mapper.hpp). Store-internal.
#pragma once
#include "agent/store/row_mapper.hpp"
#include "agent/store/store.hpp"

namespace sg::agent {

// Every trials column TrialRow holds (agent/store/trials.cpp).
const RowMap<TrialRow>& trial_map();
// Every presets column PresetRow holds (agent/store/presets.cpp).
const RowMap<PresetRow>& preset_map();

}  // namespace sg::agent
