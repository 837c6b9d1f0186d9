// One trainer run per the protocol (§2): builds argv and the environment, runs it
// under the process supervisor, watches the heartbeat file and decodes the outcome
// into either a parsed result or a failure disposition.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/common/disposition.hpp"
#include "agent/runner/process.hpp"
#include "agent/runner/result.hpp"

namespace sg::agent {

struct TrialRequest {
  std::string trainer;
  std::string workload, size;
  int steps = 4, seed = 0, micro_batch = 1, grad_accum = 1, threads = 2;
  std::vector<std::pair<std::string, std::string>> switch_env;  // SG_* entries only
  std::string dir;  // per-trial directory: result.json, stdout.log, stderr.log, heartbeat.json
  std::chrono::milliseconds deadline{std::chrono::minutes(10)};
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  // Called about once a second with the heartbeat file's content (may be empty).
  std::function<void(const std::string&)> on_heartbeat;
};

struct TrialOutcome {
  // nullopt disposition = the run finished with a valid ok result (to be judged).
  std::optional<Disposition> failure;
  std::string reason;
  std::optional<TrialResult> result;
  ProcessOutcome process;
  std::string result_path, stdout_log, stderr_log;
};

TrialOutcome run_trial(const TrialRequest& req);

// Maps process outcome + result parse to a disposition (pure; unit-tested).
// `result_ok` = a valid result with status ok was parsed.
std::optional<Disposition> decode_outcome(const ProcessOutcome& p, const ResultParse& parsed,
                                          std::string* reason);

}  // namespace sg::agent
