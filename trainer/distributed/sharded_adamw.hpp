// AdamW with optional ZeRO stage 1 (ZERO1=1): optimizer state sharded across ranks.
//
// Parameters are split into W contiguous runs in registration order, balanced by element
// count; rank r keeps exp_avg / exp_avg_sq only for its run and updates only those
// parameters, with LibTorch's own torch::optim::AdamW over that subset (AdamW updates each
// parameter independently, so the math and bits are those of the unsharded optimizer).
// After the step each owner broadcasts its updated parameters. Unsharded (ZERO1=0 or
// world size 1) it is exactly torch::optim::AdamW over all parameters.
// Workload-independent: it takes the list of trainable parameters.
#pragma once

#include "trainer/distributed/communicator.hpp"

#include <torch/optim/adamw.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg::trainer {

// Owner rank of each parameter: contiguous runs, balanced by numel.
std::vector<int> shard_owners(const std::vector<int64_t>& numels, int world_size);

class ShardedAdamW {
 public:
  // comm: null at world size 1. shard: ZERO1 (ignored without comm).
  ShardedAdamW(std::vector<at::Tensor> params, const torch::optim::AdamWOptions& options,
               Communicator* comm, bool shard);

  // REQUIRES: gradients already averaged over ranks (identical on every rank).
  void step();

  int zero_stage() const { return sharded_ ? 1 : 0; }
  // Bytes of optimizer state held by this rank.
  int64_t local_state_bytes() const;
  // Digest of the whole optimizer state in canonical order (per parameter: step, exp_avg,
  // exp_avg_sq; "<name>:no_state" before its first update), the same bytes sharded or not.
  // Collective when sharded (every rank must call it); the value is valid on rank 0.
  std::string state_digest(const std::vector<std::pair<std::string, at::Tensor>>& named);

 private:
  std::vector<at::Tensor> params_;
  Communicator* comm_ = nullptr;
  bool sharded_ = false;
  std::vector<int> owner_;  // per parameter
  std::unique_ptr<torch::optim::AdamW> optim_;
};

}  // namespace sg::trainer
