// Where this process sits in a distributed run, read from the launcher's environment the
// way torchrun sets it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so
// torchrun-style launchers, srun and the speedgate controller start ranks the same way.
// Under srun without RANK, SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID stand in for
// RANK / WORLD_SIZE / LOCAL_RANK (MASTER_ADDR and MASTER_PORT must still be exported).
// No LibTorch here: the contract is plain data, tested on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace sg::trainer {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;      // required when world_size > 1
  int master_port = 0;          // required when world_size > 1
  std::string source = "none";  // "torchrun" (RANK given), "slurm" (SLURM_* used) or "none"
  // Collective and rendezvous timeout: SPEEDGATE_DIST_TIMEOUT_S, default 300 s. A rank
  // whose peer died fails within this bound instead of hanging.
  int timeout_s = 300;

  bool distributed() const { return world_size > 1; }
};

// Reads the variables through `get` (nullptr: unset). Throws BadInputError naming the
// variable when a value is malformed, out of range, or missing for world_size > 1.
LaunchEnv read_launch_env(const std::function<const char*(const char*)>& get);
// read_launch_env over the process environment.
LaunchEnv launch_env_from_process();

}  // namespace sg::trainer
