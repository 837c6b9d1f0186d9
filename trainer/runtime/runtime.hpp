// Process-wide runtime setup of a run: device, rank, intra-op threads, deterministic
// mode, CUDA environment variables that must be set before CUDA initialises, and the
// environment fingerprint written into the result.
#pragma once

#include "trainer/switches/switches.hpp"

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace sg::trainer {

struct Runtime {
  c10::Device device{c10::kCPU};
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int threads = 2;
  bool deterministic = true;  // false when a switch value forced warn-only mode
};

// REQUIRES: called once, before any CUDA work. Throws BadInputError for a distributed
// launch (not implemented yet) or a bad torchrun environment.
Runtime setup_runtime(int threads, const Switches& sw);

nlohmann::json fingerprint(const Runtime& rt);

}  // namespace sg::trainer
