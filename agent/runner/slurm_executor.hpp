// The Slurm executor: each trial is one batch job (sbatch; job name = the trial's
// name, --time from the trial deadline, --gpus for W ranks, logs and the result file
// in the trial directory, which must be on a path shared with the compute nodes).
// W > 1 ranks start through `srun` inside the job with MASTER_ADDR/MASTER_PORT
// exported; the trainer maps SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID to its rank.
// The job is followed with `squeue -h -t all -j ID -o %T` and `scontrol show job ID`
// (no accounting daemon needed) and `scancel`led at the deadline.
#pragma once
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/runner/executor.hpp"

namespace sg::agent {

// How a job ended, as Slurm tells it.
struct SlurmEnd {
  bool submitted = true;
  std::string submit_error;
  std::string job_id;
  std::string state;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, ... ("" = lost)
  int exit_code = 0;  // ExitCode=code:signal of the batch step
  int signal = 0;
  bool cancelled_by_us = false;  // we scancelled it at the deadline
  std::string slurm_reason;      // Reason=... from scontrol
};

// A job's end decoded: its process outcome (for the store) and its failure (nullopt = a
// valid ok result).
struct SlurmDecode {
  ProcessOutcome process;
  std::optional<Failure> failure;
};

// Maps a job's end and its result file to a process outcome and a failure. Pure;
// documented in docs/controller.md "Slurm states".
SlurmDecode decode_slurm_end(const SlurmEnd& end, const ResultParse& parsed);

// A rank that srun's error log names as failed: "srun: error: node: task 1: Aborted".
struct SrunTaskFailure {
  int rank = 0;
  std::string what;  // "Aborted", "Exited with exit code 3", ...
};

// The rank to blame among the tasks srun's log names (nullopt: none named). srun lists
// them in the order it hears of them, not the order they failed, so a rank that died by
// its own signal (not the SIGTERM/SIGKILL sent to peers) is preferred over ranks that
// exited with a code, as the local executor prefers it; else the first listed. Pure.
std::optional<SrunTaskFailure> blamed_srun_task(const std::string& srun_log);

// True for the states after which a job runs no more.
bool slurm_state_terminal(const std::string& state);

class SlurmExecutor : public Executor {
 public:
  explicit SlurmExecutor(ExecutorOptions options);

  std::string name() const override { return "slurm"; }
  int capacity(int /*world_size*/) const override { return parallel_; }
  TrialOutcome run(const TrialRequest& req) override;
  void cancel_orphan(const std::string& job_id) override;

 private:
  void acquire(bool exclusive);
  void release(bool exclusive);
  std::vector<std::string> sbatch_args(const TrialRequest& req, const TrialOutcome& out,
                                       const std::string& script) const;
  // Polls the submitted job `end.job_id` until it ends (its state into `end`) or is lost
  // (state left empty), passing heartbeats on and scancelling it at the deadline.
  void follow_job(const TrialRequest& req, const std::string& heartbeat, SlurmEnd& end) const;

  ExecutorOptions o_;
  int parallel_;
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  bool exclusive_running_ = false;
};

}  // namespace sg::agent
