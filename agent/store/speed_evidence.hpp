// The speed evidence (schema v6): every ABAB pair behind a verdict, the host's A/A noise
// and the rounding band per step budget. Store methods: agent/store/speed_store.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sg::agent {

// One ABAB pair behind a speed verdict (evaluation_id 0 for A/A noise pairs).
struct SpeedPairRow {
  std::int64_t campaign_id = 0, evaluation_id = 0, base_trial_id = 0, cand_trial_id = 0;
  std::string config_key;
  int steps = 0, pair_index = 0;
  double base_step_s = 0, cand_step_s = 0, log_ratio = 0;
};

struct HostNoiseRow {
  std::int64_t campaign_id = 0;
  int steps = 0, micro_batch = 0, pairs = 0, max_repeats = 0;
  double sd_log_ratio = 0, mean_log_ratio = 0, detectable_speedup = 0, resolution = 0,
         min_effect = 0;
};

struct RoundingBandRow {
  std::int64_t campaign_id = 0;
  int steps = 0, seeds = 0;
  double perturb_eps = 0, curve_rms = 0, eval_loss_abs = 0, grad_norm_log = 0, seed_curve_rms = 0;
  std::vector<std::int64_t> trial_ids;
};

}  // namespace sg::agent
