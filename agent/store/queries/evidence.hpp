// The "why" views of the dashboard: the gate's evidence for one evaluation (its loss
// curve against the baseline's and the seed band, its speed pairs with their interval)
// and each switch's own gain. Both read columns and tables that newer schemas add
// (evaluations.speedup_lo/hi/pairs, speed_pairs) only when the file has them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::agent::dashboard {

// {evaluation, runs: [...], loss: {baseline, band_seeds, candidate, band_rms, factor,
// limit}, pairs: [{index, base_trial_id, cand_trial_id, base, cand, ratio}], pairs_source}
// for one evaluation; nullopt when absent.
std::optional<nlohmann::json> evaluation_evidence(Store& store, std::int64_t evaluation_id);

// Each switch's own gain: the newest evaluation of each configuration that adds exactly
// one switch once the entries its other switches require (the manifest's `requires`) are
// set aside (`with`), e.g. the screen's singles, with its speedup, interval when recorded
// (speedup_lo / speedup_hi, else ± spread) and disposition; best first.
nlohmann::json switch_effects(Store& store, std::int64_t campaign_id);

}  // namespace sg::agent::dashboard
