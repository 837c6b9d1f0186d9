// Frontier points, shared by "stack" and "prune": a combination with each non-default
// value of every available memory switch, one at a time, so each memory budget finds its
// fastest configuration that fits (e.g. CKPT_LAYERS=0 for a large budget, 8 or 16 for a
// small one). The manifest's candidates are coarse (CKPT_LAYERS 0/4/8/16), so for an int
// dial the values between one that fits a budget and one next to it that does not (for
// memory) are searched too, by the projections' line or by halving, up to twice per budget
// (SearchOptions::budget_bytes; none without budgets).
#pragma once
#include <string>

#include "agent/search/strategy.hpp"

namespace sg::agent {

// Evaluates `combination` plus each memory switch value at full_steps under `strategy`'s
// name. Dials (int switches) with the most candidate values first: the main memory/speed
// knob (e.g. CKPT_LAYERS) and its refinement toward each budget before small ones, so a
// trial budget that ends early has spent it there; then the rest in manifest order.
// Nothing when `combination` is empty.
void evaluate_memory_points(SearchContext& ctx, const Config& combination,
                            const std::string& strategy);

}  // namespace sg::agent
