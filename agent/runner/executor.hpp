// The executor seam: where and when a trial runs. `local` runs the ranks on this host,
// scheduling trials onto free GPU slots (or CPU slots); `slurm` submits each trial as
// a Slurm job and follows it through squeue/scontrol. Both return the same
// TrialOutcome, so the campaign, the gate and the store do not know which ran it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "agent/runner/trial.hpp"

namespace sg::agent {

struct ExecutorOptions {
  // local | slurm
  std::string kind = "local";
  // Local: GPU slots on this host; -1 = count `nvidia-smi -L` lines (0 when absent).
  int gpus = -1;
  // Trials at once. Local with GPUs: default (0) = slots / trial world size, and at
  // most that. Local without GPUs (CPU host) and Slurm: default 1.
  int parallel_trials = 0;
  // Slurm: partition (empty = the cluster's default), directory shared by the
  // controller and the compute nodes for logs and result files (empty = the runs
  // directory), GPUs per rank requested with --gpus (0 = CPU-only cluster).
  std::string slurm_partition;
  std::string shared_dir;
  int slurm_gpus_per_rank = 1;
  // Slurm: seconds between two squeue polls of a running job.
  double slurm_poll_s = 1.0;

  // Throws UsageError naming the bad field.
  void validate() const;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // How many trials of `world_size` ranks may run at once (>= 1).
  virtual int capacity(int world_size) const = 0;
  // Runs one trial to its end. Thread-safe: blocks while its resources are taken.
  // An exclusive request waits until nothing else runs and keeps others out.
  virtual TrialOutcome run(const TrialRequest& req) = 0;
  // A trial left RUNNING by a dead controller: stop what is left of it (Slurm:
  // scancel its job). Locally the store already killed the orphan's process group.
  virtual void cancel_orphan(const std::string& /*job_id*/) {}
};

// Throws UsageError when the options are bad or a trial of `trial_world_size` ranks
// can never run (fewer GPU slots than ranks).
std::unique_ptr<Executor> make_executor(const ExecutorOptions& options, int trial_world_size = 1);

// GPUs on this host: the `GPU n:` lines of `nvidia-smi -L`; 0 without nvidia-smi.
int detect_gpus();

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read, close).
int free_tcp_port();

}  // namespace sg::agent
