// Process-wide runtime setup of a run: device, rank, intra-op threads, deterministic
// mode, CUDA environment variables that must be set before CUDA initialises, and the
// environment fingerprint written into the result.
#pragma once

#include "trainer/distributed/launch_env.hpp"
#include "trainer/switches/switches.hpp"

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace sg::trainer {

class Communicator;

struct Runtime {
  c10::Device device{c10::kCPU};
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  LaunchEnv launch;                    // where RANK etc. came from (launch_env.hpp)
  std::shared_ptr<Communicator> comm;  // set by connect_distributed; null at world size 1
  int threads = 2;
  bool deterministic = true;  // false when a switch value forced warn-only mode
};

// REQUIRES: called once, before any CUDA work. Throws BadInputError for a bad launcher
// environment (launch_env.hpp). On CUDA, LOCAL_RANK selects the device.
Runtime setup_runtime(int threads, const Switches& sw);

// For world size > 1: rendezvous with the other ranks and set rt.comm (Gloo on the CPU,
// NCCL on CUDA). Throws BadInputError when this build cannot, std::runtime_error when the
// rendezvous fails or times out.
void connect_distributed(Runtime& rt);

nlohmann::json fingerprint(const Runtime& rt);

}  // namespace sg::trainer
