// One trainer run per the protocol (§2): builds argv and the environment, runs its
// ranks on this host under the process supervisor (one process group), watches the
// heartbeat file and decodes the outcome into either a parsed result or a failure
// disposition. Executors (executor.hpp) decide where and when a trial runs.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/common/disposition.hpp"
#include "agent/protocol/result.hpp"
#include "agent/runner/process.hpp"

namespace sg::agent {

// A kernel-level trial (protocol §5: `kernel-trial`) instead of a training run: times
// these variants of one kernel family at the request's workload, size and micro-batch.
struct KernelTrialSpec {
  std::string family;
  std::vector<std::string> variants;  // "plain" or parameter strings
  int repeats = 31;
};

struct TrialRequest {
  std::string trainer;
  std::string workload, size;
  int steps = 4, seed = 0, micro_batch = 1, grad_accum = 1, threads = 2;
  std::vector<std::pair<std::string, std::string>> switch_env;  // SG_* entries only
  double perturb = 0;  // > 0: `run --perturb EPS` (protocol §2; the rounding band's runs)
  std::string dir;     // per-trial directory: result.json, stdout.log, stderr.log, heartbeat.json
  // Data-parallel ranks. W > 1: each rank gets the torchrun contract (RANK, WORLD_SIZE,
  // LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); rank 0 writes the result.
  int world_size = 1;
  // Added to every rank's environment by the executor (CUDA_VISIBLE_DEVICES, MASTER_*).
  std::vector<std::pair<std::string, std::string>> launch_env;
  // A speed measurement: it must not share its host with other trials.
  bool exclusive = false;
  std::string name;  // the trial's name for executors that show one (Slurm job name)
  // Slurm: called once the job is submitted, with its id (recorded for resume).
  std::function<void(const std::string& job_id)> on_submitted;
  // Local: called with the trial's process group before any rank can run (recorded so
  // a later controller can end what a dead one left).
  std::function<void(int pgid)> on_started;
  std::chrono::milliseconds deadline{std::chrono::minutes(10)};
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  // Called about once a second with the heartbeat file's content (may be empty).
  std::function<void(const std::string&)> on_heartbeat;
  // Set: run `kernel-trial` (steps, seed, grad_accum and switch_env do not apply).
  std::optional<KernelTrialSpec> kernel;
};

struct TrialOutcome {
  // nullopt disposition = the run finished with a valid ok result (to be judged).
  std::optional<Disposition> failure;
  std::string reason;
  std::optional<TrialResult> result;
  ProcessOutcome process;  // the rank that decided the outcome (the failing one, else rank 0)
  std::vector<ProcessOutcome> ranks;
  int failed_rank = -1;                           // the rank whose failure ended the trial, -1 none
  int pgid = 0;                                   // local runs: the trial's process group
  std::string executor = "local", slots, job_id;  // where it ran (slots: GPU ids or CPU slot)
  std::string result_path, stdout_log, stderr_log;
};

// The variables of the torchrun launch contract: stripped from the controller's own
// environment before a trial (a controller started under srun or torchrun must not
// hand its own rank to the trainer) and set per rank when W > 1.
bool is_launch_variable(const std::string& name);

// What every rank of a trial starts with, whatever the executor: this process's
// environment without SG_* switches or launch variables, then the configuration's
// switches, then the executor's launch additions.
std::vector<std::pair<std::string, std::string>> trial_environment(const TrialRequest& req);

// The trainer's argv after the executable (`run --workload ... --heartbeat PATH`).
std::vector<std::string> trainer_args(const TrialRequest& req, const std::string& result_path,
                                      const std::string& heartbeat_file);

// A trial's heartbeat file: req.dir/heartbeat.json.
std::string heartbeat_path(const TrialRequest& req);

// Creates req.dir and removes a result and heartbeat left there; the outcome to fill,
// with its result_path, stdout_log and stderr_log in req.dir.
TrialOutcome prepare_trial_dir(const TrialRequest& req);

// The heartbeat file's content for TrialRequest::on_heartbeat: empty when it is missing
// or beyond kHeartbeatLimits (a hostile heartbeat counts as none, never parsed).
std::string read_heartbeat(const std::string& path);

// Parses the request's result file: a training run's (result.hpp) or a kernel trial's
// header (kernel_trial_result.hpp). An ok result that is not the run `req` launched
// (result_check.hpp; `wall_s` > 0: the deciding process's run time) gives no result and
// the mismatch as the error, so it decodes as invalid_result.
ResultParse parse_trial_result(const TrialRequest& req, const std::string& path, double wall_s = 0);

// Sets out.failure from `failure`, and out.reason when there is one (nullopt: no failure,
// the reason left as it is).
void set_failure(TrialOutcome& out, const std::optional<Failure>& failure);

// Decodes a finished trial: exit/signal of the deciding rank and the result file.
void decode_trial(TrialOutcome& out, const ResultParse& parsed);

TrialOutcome run_trial(const TrialRequest& req);

// Maps process outcome + result parse to a failure (pure; unit-tested); nullopt = a valid
// ok result. Exit 0 with an ok result holding a non-finite loss, grad norm or eval loss is
// nan, never accepted.
std::optional<Failure> decode_outcome(const ProcessOutcome& p, const ResultParse& parsed);

}  // namespace sg::agent
