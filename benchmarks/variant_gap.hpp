// The kernel-variant check of the Kernels issue: "the best variant found by the
// controller within 5 % of the best of an exhaustive sweep". Reads a campaign from a
// speedgate store (its presets, else its best accepted evaluation, per kernel family) and
// the sweep written by `speedgate-kernels-bench --json`, and reports per family the
// parameters the campaign chose, the sweep's best, and the gap in forward + backward time
// summed over the family's ops. Used by speedgate-variant-gap (variant_vs_sweep.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/store/store.hpp"

namespace sg::bench {

// A chosen variant slower than the sweep's best by more than this fails the check.
constexpr double kVariantGapLimitPercent = 5.0;

struct FamilyGap {
  std::string family, switch_name;
  // compared | unavailable | not_chosen | not_swept | params_not_swept
  std::string status;
  std::string detail;            // why, for anything but "compared"
  std::string chosen;            // canonical parameters, "threads=128,vec=2"
  std::string chosen_from;       // "preset fast", "evaluation 12 (local, 1.310x)"
  std::string best;              // the sweep's best parameters
  std::vector<std::string> ops;  // the sweep's ops of this family
  double chosen_us = 0, best_us = 0, plain_us = 0;  // fwd+bwd, summed over ops
  double gap_percent = 0;
};

struct GapReport {
  std::int64_t campaign_id = 0;
  std::string campaign_shape, sweep_shape, gpu;  // "wam/base, micro-batch 32"
  bool shapes_match = false;
  std::vector<FamilyGap> families;
};

// REQUIRES: sweep is the --json output of speedgate-kernels-bench. Throws
// std::invalid_argument naming the problem (no campaign, malformed sweep).
GapReport variant_gap(agent::Store& store, std::optional<std::int64_t> campaign_id,
                      const nlohmann::json& sweep);

std::string render_gap_text(const GapReport& r);
nlohmann::json render_gap_json(const GapReport& r);
// False when a compared family's gap exceeds kVariantGapLimitPercent.
bool gaps_within_limit(const GapReport& r);

}  // namespace sg::bench
