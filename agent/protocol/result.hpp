// The trainer's result file (protocol §3), parsed strictly: anything missing,
// truncated, garbage, beyond the size caps (kResultLimits) or of another schema is an
// invalid result, never a guess. Numbers must be finite and in range; the kept `raw`
// is the validated fields re-serialised, never the trainer's text.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/common/problem.hpp"

namespace sg::agent {

struct StepRecord {
  int step = 0;
  std::uint32_t loss_bits = 0, grad_norm_bits = 0;
  double loss = 0, grad_norm = 0, seconds = 0;  // loss/grad_norm decoded from the bits
};

struct MemoryBreakdown {
  double parameters = 0, gradients = 0, optimizer = 0, frozen = 0, activations = 0;
};

struct TrialResult {
  std::string status;  // ok | oom | nan | error
  std::string error;
  std::string workload, size;
  std::map<std::string, std::string> switches;  // SG_* -> value as the trainer resolved them
  int seed = 0, steps = 0, micro_batch = 0, grad_accum = 1, world_size = 1;
  std::vector<StepRecord> step_records;
  std::string param_digest, optimizer_digest;
  bool has_eval = false;  // false with --eval-batches 0 (eval_loss_bits empty)
  double eval_loss = 0;
  std::uint32_t eval_loss_bits = 0;
  double samples_per_s = 0, tokens_per_s = 0, model_flops_per_step = 0;
  int steady_state_steps = -1;  // -1: not given (the steps after the default 2 warm-up steps)
  int threads = -1;             // fingerprint.threads; -1: not given
  std::string device;
  std::vector<double> peak_allocated, peak_reserved;
  // Optional (protocol §3): peak allocated bytes inside each training phase, max over
  // ranks; the memory projection fits one line per phase when both points carry it.
  std::map<std::string, double> phase_peak_allocated;
  MemoryBreakdown breakdown;
  nlohmann::json fingerprint;
  double device_memory_bytes = 0;  // fingerprint.device_memory_bytes; 0: not given
  nlohmann::json raw;              // the validated fields (parse_result_text reads it back)

  double peak_allocated_max() const;
  double peak_reserved_max() const;
};

using ResultParse = Parsed<TrialResult>;

// Parses an ok/oom/nan/error result. A status other than "ok" only needs status
// and error; an "ok" result must carry every field the gate uses (a missing one is named
// with the schema file, kResultSchema).
constexpr const char* kResultSchema = "schemas/result.schema.json";
ResultParse parse_result_text(const std::string& text);
ResultParse parse_result_file(const std::string& path);

// Stable hash of the fingerprint fields that make results comparable.
std::string fingerprint_hash(const nlohmann::json& fingerprint);

}  // namespace sg::agent
