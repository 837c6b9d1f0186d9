// Optimizer helpers shared by training loops: global-norm gradient clipping and a
// byte-exact digest of AdamW's state (step, exp_avg, exp_avg_sq per parameter, in the
// canonical parameter order). Used by the wam and lm loops and by ShardedAdamW.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace sg::trainer {

// AdamW's state for parameter p, or nullptr before its first step (the state map's key
// differs between LibTorch 1.x and 2.x).
const torch::optim::AdamWParamState* adam_state(const torch::optim::AdamW& optim,
                                                const at::Tensor& p);

// Global L2 norm of all gradients (a float32 0-dim tensor on their device, not read back
// here), after scaling them by min(1, max / norm).
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

// Digest of the optimizer state; *bytes gets the bytes of exp_avg and exp_avg_sq.
std::string optimizer_digest(const torch::optim::AdamW& optim,
                             const std::vector<std::pair<std::string, at::Tensor>>& named,
                             int64_t* bytes);

}  // namespace sg::trainer
