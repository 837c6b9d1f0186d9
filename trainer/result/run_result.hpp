// The result file of a run (docs/protocol.md section 3) as a struct, and its JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result/result_json.hpp"

namespace sg::trainer {

struct StepRecord {
  int64_t step = 0;
  float loss = 0.0f;
  float grad_norm = 0.0f;
  double seconds = 0.0;
};

struct MemoryBreakdown {
  int64_t parameters = 0, gradients = 0, optimizer = 0, frozen = 0, activations = 0;
};

struct RunResult {
  std::string status = "error";  // ok | oom | nan | error
  std::string error;
  std::string workload, size;
  int64_t seed = 0, steps = 0, micro_batch = 0, grad_accum = 0, world_size = 1;
  std::map<std::string, std::string> switches;
  std::vector<StepRecord> step_records;
  std::string param_digest, optimizer_digest;
  std::vector<std::string> rank_param_digests;  // per rank, rank order (one entry on one rank)
  int64_t zero_stage = 0;                       // 1 with ZERO1 at world size > 1
  float eval_loss = 0.0f;
  bool has_eval = false;
  double samples_per_s = 0.0, tokens_per_s = 0.0;
  int64_t steady_state_steps = 0;
  double model_flops_per_step = 0.0;
  std::string memory_device = "cpu";
  std::vector<int64_t> peak_allocated, peak_reserved;
  std::map<std::string, int64_t> phase_peak_allocated;  // max over ranks; empty: not measured
  MemoryBreakdown breakdown;
  nlohmann::json fingerprint = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object();  // text-cache stats etc., for people
};

nlohmann::json to_json(const RunResult& r);

// Writes PATH.tmp.<pid>, fsyncs, renames to PATH. Throws std::runtime_error on failure.
void write_file_atomically(const std::string& path, const std::string& content);

// {"pid": P, "step": i, "time": unix_seconds}, written atomically.
void write_heartbeat(const std::string& path, int64_t step);

}  // namespace sg::trainer
