// Trainer runs: rows of the trials table, and what a finished run writes (its steps
// go to the steps table). Store methods: agent/store/trials.cpp and stale_trials.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/disposition.hpp"

namespace sg::agent {

struct TrialRow {
  std::int64_t id = 0, campaign_id = 0;
  std::string trial_key, purpose, config_key;
  std::string config_json = "{}";  // used by claim_trial
  int seed = 0, steps = 0, micro_batch = 1, grad_accum = 1, repeat = 0;
  std::string state;
  std::optional<Disposition> disposition;
  bool run_ok = false;
  std::string reason;
  double wall_s = 0, samples_per_s = 0, peak_allocated_bytes = 0;
  std::optional<int> exit_code, signal;
  std::string param_digest, optimizer_digest, stdout_log, stderr_log, result_path, result_json;
  double eval_loss = 0;
  std::string host;
  int controller_pid = 0, pgid = 0;
  double heartbeat_at = 0;
  std::optional<std::int64_t> requeued_from;
};

// What the runner learned, written when a trial finishes.
struct TrialFinish {
  std::optional<Disposition> disposition;  // failure, or nullopt when run_ok
  bool run_ok = false;
  std::string reason;
  double wall_s = 0;
  std::optional<int> exit_code, signal;
  std::string stdout_log, stderr_log, result_path, result_json, trial_dir;
  // Copied from a valid result:
  double samples_per_s = 0, tokens_per_s = 0, peak_allocated = 0, peak_reserved = 0, eval_loss = 0;
  std::string eval_loss_bits, param_digest, optimizer_digest;
  nlohmann::json breakdown;
  std::optional<std::int64_t> environment_id;
  struct Step {
    int step;
    double loss;
    std::string loss_bits;
    double grad_norm;
    std::string grad_norm_bits;
    double seconds;
  };
  std::vector<Step> steps;
};

}  // namespace sg::agent
